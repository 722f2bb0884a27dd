/*
 * The zstd seekable format, as the zstd project publishes it
 * (contrib/seekable_format): independent zstd frames, then one skippable
 * frame holding the seek table. Everything is little-endian.
 *
 *   skippable frame: magic 0x184D2A5E (u32), Frame_Size (u32: the bytes
 *                    that follow), then
 *   entries:         per frame, Compressed_Size (u32), Decompressed_Size
 *                    (u32) and, when the footer's checksum flag is set,
 *                    Checksum (u32: the low 32 bits of the XXH64, seed 0,
 *                    of the frame's decompressed bytes);
 *   footer (9 bytes): Number_Of_Frames (u32), Seek_Table_Descriptor (u8:
 *                    bit 7 the checksum flag, bits 6-2 reserved and zero,
 *                    bits 1-0 unused), Seekable_Magic_Number 0x8F92EAB1
 *                    (u32).
 *
 * The constants and the table type are shared by the reader
 * (zsrc_seekable.c) and any writer of the format; the parser is pure (bytes
 * in, table out) so it can be fuzzed alone. Internal to the I/O layer.
 */
#ifndef STF_IO_ZSTD_SEEK_H
#define STF_IO_ZSTD_SEEK_H

#include <stddef.h>
#include <stdint.h>

#include "io/io_internal.h"

/* A zstd frame starts with this magic number (bytes 28 B5 2F FD). */
#define STF__ZSTD_MAGIC 0xFD2FB528u
/* Skippable frames: 0x184D2A50 to 0x184D2A5F, then a u32 content size. */
#define STF__ZSTD_SKIPPABLE_MAGIC 0x184D2A50u
#define STF__ZSTD_SKIPPABLE_MASK 0xFFFFFFF0u
#define STF__ZSTD_SKIPPABLE_HEADER 8u
/* The skippable frame that holds the seek table. */
#define STF__SEEK_TABLE_MAGIC 0x184D2A5Eu
/* The last four bytes of a seekable file. */
#define STF__SEEKABLE_MAGIC 0x8F92EAB1u
#define STF__SEEK_FOOTER_SIZE 9u
#define STF__SEEK_CHECKSUM_FLAG 0x80u
#define STF__SEEK_RESERVED_BITS 0x7Cu
/* Bytes of one entry without and with the checksum. */
#define STF__SEEK_ENTRY_SIZE 8u
#define STF__SEEK_ENTRY_SIZE_CHECKSUM 12u

/* What the footer says: enough to read the rest of the table. */
typedef struct stf__seek_footer {
    uint32_t nframes;
    int checksum;            /* entries carry a checksum */
    uint64_t table_size;     /* the whole skippable frame, its 8-byte header included */
} stf__seek_footer;

/* One frame: where its compressed bytes are and what they decode to. */
typedef struct stf__seek_frame {
    uint64_t c_off;          /* absolute offset of the frame in the file */
    uint64_t d_off;          /* offset of its first decompressed byte */
    uint32_t c_size, d_size;
    uint32_t checksum;       /* valid when the table has checksums */
} stf__seek_frame;

typedef struct stf__seek_table {
    stf__seek_frame *frames; /* nframes entries, in file order */
    size_t nframes;
    int checksum;
    uint64_t table_off;      /* where the seek-table frame starts (= bytes of frames) */
    uint64_t d_size;         /* sum of the decompressed sizes */
} stf__seek_table;

/*
 * Whether the last 9 bytes `b` of a file end in the seekable magic number:
 * the file claims to be seekable, and stf__seek_footer_parse decides.
 */
int stf__seek_footer_present(const uint8_t b[STF__SEEK_FOOTER_SIZE]);

/*
 * Parse the footer `b` (the last 9 bytes) of a seekable file of
 * `file_size` bytes: reserved bits clear, a table that fits the file
 * (S27), at most o->max_zstd_frames frames (L10). Errors name `path` and
 * the offset of the footer.
 */
int stf__seek_footer_parse(stf__seek_footer *out, const uint8_t b[STF__SEEK_FOOTER_SIZE],
                           uint64_t file_size, const char *path, const stf__zread_opts *o,
                           stf_err *err);

/*
 * Parse the seek-table frame `tbl` (f->table_size bytes, the end of the
 * file) into *out: the skippable magic and frame size agree with the footer,
 * every frame has compressed bytes and no more than zstd's bound for its
 * decompressed size, no frame decodes to more than o->max_zstd_frame bytes
 * (L9), and the frames end exactly where the table begins (S27). Allocates f->nframes entries (the caller has bounded it
 * with the footer); free with stf__seek_table_free. On failure *out is
 * empty.
 */
int stf__seek_table_parse(stf__seek_table *out, const stf__seek_footer *f, const uint8_t *tbl,
                          uint64_t file_size, const char *path, const stf__zread_opts *o,
                          stf_err *err);

/* Index of the frame holding decompressed byte `off` (< t->d_size). */
size_t stf__seek_table_find(const stf__seek_table *t, uint64_t off);

void stf__seek_table_free(stf__seek_table *t);

#endif
