# The table of one tests/bench/fix_e2e.sh or batch_e2e.sh case. Input lines:
#   CASE ROUND COMMAND WALL_S USER_S SYS_S PEAK_RSS_KIB EXIT SETTLED
# Variables: c (case), isz/osz (input/output bytes), rec (recipe), json
# (a file to append JSON objects to, one a line; empty: none).
function med(a, n,    i, j, t, b) {
    for (i = 1; i <= n; i++) b[i] = a[i]
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && b[j - 1] > b[j]; j--) { t = b[j]; b[j] = b[j - 1]; b[j - 1] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2
}
function lo(a, n,    i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function hi(a, n,    i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
# Per-round ratio of commands x and y into r[] (wall time, or CPU time
# user + sys when cpu is set); returns the round count.
function ratios(x, y, r, cpu,    k, n) {
    n = 0
    for (k = 0; k < rounds; k++)
        if (cpu && (x, k) in C && (y, k) in C && C[y, k] > 0) r[++n] = C[x, k] / C[y, k]
        else if (!cpu && (x, k) in W && (y, k) in W && W[y, k] > 0) r[++n] = W[x, k] / W[y, k]
    return n
}
function show_ratio(label, x, y, cpu,    r, n) {
    if (!(x in N) || !(y in N)) return
    n = ratios(x, y, r, cpu)
    if (!n) return
    printf "  %-32s %6.3f (rounds %.3f-%.3f)\n", label, med(r, n), lo(r, n), hi(r, n)
    if (json != "")
        printf "{\"name\": \"e2e_%s\", \"variant\": \"%s/%s%s\", \"ratio\": %.4f, \"ratio_min\": %.4f, \"ratio_max\": %.4f, \"rounds\": %d}\n",
               c, x, y, cpu ? " cpu" : "", med(r, n), lo(r, n), hi(r, n), n >> json
}
{
    cmd = $3
    if (!(cmd in N)) order[++ncmds] = cmd
    k = ++N[cmd]
    wall[cmd, k] = $4; cpu[cmd, k] = $5 + $6; usr[cmd, k] = $5; sys[cmd, k] = $6
    rss[cmd, k] = $7
    W[cmd, $2] = $4
    C[cmd, $2] = $5 + $6
    if ($2 + 1 > rounds) rounds = $2 + 1
    if (!$9) unsettled++
}
END {
    gib = isz / 1073741824
    printf "fix_e2e: %s: input %.2f GiB, output %.2f GiB, recipe %s\n", c, gib, osz / 1073741824, rec
    printf "  %-9s %22s %24s %10s\n", "command", "wall s: median (range)", "cpu s: median (usr+sys)", "peak RSS"
    for (i = 1; i <= ncmds; i++) {
        x = order[i]; n = N[x]
        for (k = 1; k <= n; k++) { a[k] = wall[x, k]; b[k] = cpu[x, k]; u[k] = usr[x, k]; s[k] = sys[x, k]; m[k] = rss[x, k] }
        printf "  %-9s %7.3f (%6.3f-%6.3f) %8.3f (%6.3f+%6.3f) %6.1f MiB\n", x, med(a, n), lo(a, n),
               hi(a, n), med(b, n), med(u, n), med(s, n), hi(m, n) / 1024
        if (json != "")
            printf "{\"name\": \"e2e_%s\", \"variant\": \"%s\", \"bytes\": %d, \"wall_s\": %.4f, \"wall_min_s\": %.4f, \"wall_max_s\": %.4f, \"cpu_s\": %.4f, \"user_s\": %.4f, \"sys_s\": %.4f, \"peak_rss_kib\": %d, \"rounds\": %d}\n",
                   c, x, isz, med(a, n), lo(a, n), hi(a, n), med(b, n), med(u, n), med(s, n),
                   hi(m, n), n >> json
        if (x == "check" || x == "plan") { probe[x] = med(a, n) / gib; probec[x] = med(b, n) / gib }
    }
    show_ratio("fix / (cp + sync)", "fix", "cp+sync", 0)
    show_ratio("fix / cp", "fix", "cp", 0)
    # The disk's floor for fix's output bytes: fix / disk is how far fix is
    # from the disk, disk / (cp + sync) the lowest fix / (cp + sync) can be.
    show_ratio("fix / disk floor", "fix", "disk", 0)
    show_ratio("disk floor / (cp + sync)", "disk", "cp+sync", 0)
    # CPU time (user + sys) swings less than wall time on a busy machine.
    show_ratio("fix / (cp + sync), cpu time", "fix", "cp+sync", 1)
    show_ratio("check --numeric / cat", "check", "cat", 0)
    show_ratio("check --numeric / cat, cpu time", "check", "cat", 1)
    show_ratio("batch / sum of single fix runs", "batch", "fixes", 0)
    show_ratio("batch / sum of single fix runs, cpu time", "batch", "fixes", 1)
    show_ratio("batch / batch --hash none", "batch", "nohash", 0)
    show_ratio("batch / batch --hash none, cpu time", "batch", "nohash", 1)
    show_ratio("batch --hash none / single fixes", "nohash", "fixes", 0)
    show_ratio("batch --hash none / fixes, cpu time", "nohash", "fixes", 1)
    show_ratio("batch / cp -r", "batch", "cp-r", 0)
    show_ratio("batch / (cp -r + sync)", "batch", "cp-r+sync", 0)
    show_ratio("batch / (cp -r + sync), cpu time", "batch", "cp-r+sync", 1)
    if ("check" in probe)
        printf "  probes: check --numeric %.3f s/GiB (cpu %.3f), plan %.3f s/GiB (cpu %.3f)\n",
               probe["check"], probec["check"], probe["plan"], probec["plan"]
    if (unsettled)
        printf "  note: %d command(s) started before dirty pages drained (BENCH_SETTLE_S)\n", unsettled
}
