/*
 * Sizes as people type them: "5000000000", "5GB", "5gb", "1.5GB",
 * "512MiB", "5G", "4Gi" (stfix(1), Sizes). The number is a decimal with an
 * optional fraction, taken as the exact rational it spells: "1.1GB" is
 * 1100000000 bytes, never 1099999999.9999 of a double rounded. A fraction of
 * a byte left over ("0.3KiB" is 307.2) is dropped: every size stfix takes
 * is an upper bound.
 */
#include <stddef.h>
#include <strings.h>

#include "cli.h"

/* The units, their case ignored. A bare letter is a power of 1024, as in
 * du(1) and split(1); "KB" a power of 1000, as a disk's label means it;
 * "KiB" and "Ki" (Kubernetes) a power of 1024. */
static const struct unit {
    const char *name;
    unsigned long long mul;
} units[] = {
    { "", 1 },
    { "b", 1 },
    { "k", 1ULL << 10 },  { "kb", 1000ULL },                { "kib", 1ULL << 10 }, { "ki", 1ULL << 10 },
    { "m", 1ULL << 20 },  { "mb", 1000000ULL },             { "mib", 1ULL << 20 }, { "mi", 1ULL << 20 },
    { "g", 1ULL << 30 },  { "gb", 1000000000ULL },          { "gib", 1ULL << 30 }, { "gi", 1ULL << 30 },
    { "t", 1ULL << 40 },  { "tb", 1000000000000ULL },       { "tib", 1ULL << 40 }, { "ti", 1ULL << 40 },
    { "p", 1ULL << 50 },  { "pb", 1000000000000000ULL },    { "pib", 1ULL << 50 }, { "pi", 1ULL << 50 },
    { "e", 1ULL << 60 },  { "eb", 1000000000000000000ULL }, { "eib", 1ULL << 60 }, { "ei", 1ULL << 60 },
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Parse a size into bytes; see cli.h. */
int cli_parse_size(const char *s, unsigned long long *out)
{
    if (!s || !is_digit(*s)) return -1; /* no blank, sign or bare point first */
    size_t nint = 0, nfrac = 0;
    while (is_digit(s[nint])) nint++;
    const char *frac = s + nint, *unit = frac;
    if (*frac == '.') {
        frac++;
        while (is_digit(frac[nfrac])) nfrac++;
        if (!nfrac) return -1; /* "5.GB" */
        unit = frac + nfrac;
    }
    unsigned long long mul = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcasecmp(unit, units[i].name)) mul = units[i].mul;
    if (!mul) return -1;
    /*
     * The digits D (the point left out) times mul, from the last digit to
     * the first as long multiplication does, each digit times mul plus the
     * carry: one product digit out and the rest carried (below 10 * mul,
     * which fits: mul is at most 2^60). The product's last nfrac digits are
     * the fraction of a byte dropped; the others are the bytes, added up
     * with a check that they fit.
     */
    unsigned long long carry = 0, v = 0, pow10 = 1;
    int pow_over = 0; /* pow10 has passed 10^19, the last power that fits */
    size_t n = nint + nfrac, pos = 0;
    for (size_t k = n; k-- > 0; pos++) {
        char c = k < nint ? s[k] : frac[k - nint];
        unsigned long long p = (unsigned long long)(c - '0') * mul + carry;
        unsigned long long d = p % 10;
        carry = p / 10;
        if (pos < nfrac) continue;
        if (d && (pow_over || d > (~0ULL - v) / pow10)) return -2;
        v += d * pow10;
        if (pow10 > ~0ULL / 10) pow_over = 1;
        else pow10 *= 10;
    }
    /* What is carried past the first digit stands in front of them all
     * (there is a digit before any point, so it is whole bytes). */
    if (carry && (pow_over || carry > (~0ULL - v) / pow10)) return -2;
    v += carry * pow10;
    *out = v;
    return 0;
}
