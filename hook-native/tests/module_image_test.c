/*
 * The module image parser (src/emu/image.c) on its own: the fatbin and the cubin nvcc built for the GPU check,
 * the text format, and those images cut at every length, with every byte flipped and with absurd sizes. Each
 * image sits in a heap buffer of exactly its length, so the sanitizer build catches any read past it.
 * Usage: module_image_test FATBIN CUBIN COMPRESSED_FATBIN (built by nvcc; see CMakeLists.txt).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/emu/image.h"
#include "expect.h"

/* The parser's one line of complaint goes through emu_log: counted here instead of printed. */
static int logged;

void emu_log(const char *fmt, ...) {
    (void)fmt;
    logged++;
}

typedef struct found {
    char names[16][64];
    uint64_t block_ns[16];
    int count;
} found;

static CUresult collect(void *ctx, const char *name, size_t len, uint64_t block_ns) {
    found *f = ctx;
    if (len == 0 || len >= sizeof(f->names[0]) || memchr(name, '\0', len) != NULL) {
        fprintf(stderr, "FAIL: a name of %zu bytes\n", len);
        failures++;
        return CUDA_ERROR_INVALID_IMAGE;
    }
    if (f->count < 16) {
        memcpy(f->names[f->count], name, len);
        f->names[f->count][len] = '\0';
        f->block_ns[f->count] = block_ns;
    }
    f->count++;
    return CUDA_SUCCESS;
}

/* Callback for the fuzzing: only checks what it is given is a sane name. */
static CUresult any(void *ctx, const char *name, size_t len, uint64_t block_ns) {
    (void)ctx, (void)block_ns;
    return len > 0 && memchr(name, '\0', len) == NULL ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

static int occurrences(const found *f, const char *name) {
    int n = 0;
    for (int i = 0; i < f->count && i < 16; i++) {
        n += strcmp(f->names[i], name) == 0;
    }
    return n;
}

typedef struct image {
    unsigned char *bytes;
    size_t size;
} image;

static image read_file(const char *path) {
    image im = {NULL, 0};
    FILE *in = fopen(path, "rb");
    if (in == NULL || fseek(in, 0, SEEK_END) != 0) {
        perror(path);
        exit(3);
    }
    long size = ftell(in);
    if (size <= 0 || fseek(in, 0, SEEK_SET) != 0 || (im.bytes = malloc((size_t)size)) == NULL ||
        fread(im.bytes, 1, (size_t)size, in) != (size_t)size || fclose(in) != 0) {
        perror(path);
        exit(3);
    }
    im.size = (size_t)size;
    return im;
}

/* Parses the first `len` bytes of `src` from a buffer of exactly that length (none for 0). */
static CUresult parse_exact(const unsigned char *src, size_t len, emu_image_kernel_fn fn, void *ctx) {
    unsigned char *copy = malloc(len > 0 ? len : 1);
    if (copy == NULL) {
        exit(3);
    }
    memcpy(copy, src, len);
    CUresult rc = emu_image_parse(copy, len, fn, ctx);
    free(copy);
    return rc;
}

static void expect_gpucheck_kernels(const found *f, int copies, const char *what) {
    EXPECT(f->count == 3 * copies, "%s: %d kernels, expected %d", what, f->count, 3 * copies);
    const char *names[] = {"dilu_compute", "dilu_memory", "dilu_tiny"};
    for (int i = 0; i < 3; i++) {
        EXPECT(occurrences(f, names[i]) == copies, "%s: %s found %d times, expected %d", what, names[i],
               occurrences(f, names[i]), copies);
    }
    for (int i = 0; i < f->count && i < 16; i++) {
        EXPECT(f->block_ns[i] == 0, "%s: a binary image's kernel has block time %llu, expected none", what,
               (unsigned long long)f->block_ns[i]);
    }
}

/* nvcc's fatbin (two cubins and PTX) and cubin: whole, bounded by their own size fields, and cut anywhere. */
static void test_real_images(const image *fatbin, const image *cubin) {
    found f = {0};
    EXPECT(parse_exact(fatbin->bytes, fatbin->size, collect, &f) == CUDA_SUCCESS, "the fatbin was refused");
    expect_gpucheck_kernels(&f, 2, "fatbin"); /* sm_80 and sm_90 */
    memset(&f, 0, sizeof(f));
    EXPECT(emu_image_parse(fatbin->bytes, SIZE_MAX, collect, &f) == CUDA_SUCCESS,
           "the fatbin was refused without a length");
    expect_gpucheck_kernels(&f, 2, "fatbin without a length");
    memset(&f, 0, sizeof(f));
    EXPECT(parse_exact(cubin->bytes, cubin->size, collect, &f) == CUDA_SUCCESS, "the cubin was refused");
    expect_gpucheck_kernels(&f, 1, "cubin");
    memset(&f, 0, sizeof(f));
    EXPECT(emu_image_parse(cubin->bytes, SIZE_MAX, collect, &f) == CUDA_SUCCESS,
           "the cubin was refused without a length");
    expect_gpucheck_kernels(&f, 1, "cubin without a length");

    const image *both[] = {fatbin, cubin};
    for (int i = 0; i < 2; i++) {
        int accepted = 0;
        for (size_t len = 0; len < both[i]->size; len++) {
            accepted += parse_exact(both[i]->bytes, len, any, NULL) != CUDA_ERROR_INVALID_IMAGE;
        }
        EXPECT(accepted == 0, "%s: %d cut images were not refused as invalid", i == 0 ? "fatbin" : "cubin", accepted);
    }
    EXPECT(logged == 0, "%d log lines for images without compression", logged);
}

/* Every byte flipped three ways: refused or accepted, never a read outside the image (the sanitizers judge). */
static void test_flips(const image *im, const char *what) {
    unsigned char *copy = malloc(im->size);
    if (copy == NULL) {
        exit(3);
    }
    static const unsigned char masks[] = {0x01, 0x80, 0xff};
    long refused = 0, other = 0;
    for (size_t i = 0; i < im->size; i++) {
        for (size_t m = 0; m < sizeof(masks); m++) {
            memcpy(copy, im->bytes, im->size);
            copy[i] ^= masks[m];
            CUresult rc = emu_image_parse(copy, im->size, any, NULL);
            refused += rc == CUDA_ERROR_INVALID_IMAGE;
            other += rc != CUDA_ERROR_INVALID_IMAGE && rc != CUDA_SUCCESS;
        }
    }
    free(copy);
    EXPECT(other == 0, "%s: %ld flips gave an error other than CUDA_ERROR_INVALID_IMAGE", what, other);
    EXPECT(refused > 0, "%s: no flipped byte was refused", what);
    logged = 0;
}

static void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v) {
    put16(p, (uint16_t)v);
    put16(p + 2, (uint16_t)(v >> 16));
}

static void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* A fatbin of one entry of `kind` around `payload`, with the entry header's flags; its length in *len. */
static unsigned char *wrap(uint16_t kind, const image *payload, uint64_t flags, size_t *len) {
    *len = 16 + 64 + payload->size;
    unsigned char *p = calloc(1, *len);
    if (p == NULL) {
        exit(3);
    }
    put32(p, 0xba55ed50u);
    put16(p + 4, 1);
    put16(p + 6, 16);
    put64(p + 8, 64 + payload->size);
    put16(p + 16, kind);
    put16(p + 18, 0x0101);
    put32(p + 20, 64);
    put64(p + 24, payload->size);
    put64(p + 56, flags);
    memcpy(p + 80, payload->bytes, payload->size);
    return p;
}

/* Fatbins made here: what a cubin becomes inside one, compression, PTX only, and sizes past any image. */
static void test_made_fatbins(const image *cubin, const image *compressed) {
    size_t len;
    found f = {0};
    unsigned char *p = wrap(2, cubin, 0x11, &len);
    EXPECT(parse_exact(p, len, collect, &f) == CUDA_SUCCESS, "a fatbin around the cubin was refused");
    expect_gpucheck_kernels(&f, 1, "fatbin around the cubin");

    put64(p + 8, UINT64_C(1) << 40); /* absurd size: refused before anything is read, even with no length */
    EXPECT(emu_image_parse(p, SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "a fatbin of 2^40 bytes was taken");
    put64(p + 8, EMU_IMAGE_MAX_BYTES + 1);
    EXPECT(emu_image_parse(p, SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "a fatbin over 1 GiB was taken");
    put64(p + 8, 64 + cubin->size);
    put64(p + 24, UINT64_MAX - 8); /* an entry past its fatbin, with the sum wrapping around */
    EXPECT(emu_image_parse(p, SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "an entry past the fatbin was taken");
    put64(p + 24, cubin->size);
    put32(p + 20, 8); /* an entry header too short to hold its fields */
    EXPECT(emu_image_parse(p, SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "an 8-byte entry header was taken");
    put32(p + 20, 64);
    put16(p + 4, 2);
    EXPECT(emu_image_parse(p, SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "fatbin version 2 was taken");
    put16(p + 4, 1);

    /* Each way an entry can say it is compressed: refused, with one line saying to build with --no-compress. */
    const struct {
        size_t at;
        int width;
        uint64_t value;
    } compressed_marks[] = {{56, 64, 0x2011}, {56, 64, 0x8011}, {32, 32, 100}, {72, 64, 100}};
    for (size_t i = 0; i < sizeof(compressed_marks) / sizeof(compressed_marks[0]); i++) {
        unsigned char *q = wrap(2, cubin, 0x11, &len);
        if (compressed_marks[i].width == 64) {
            put64(q + compressed_marks[i].at, compressed_marks[i].value);
        } else {
            put32(q + compressed_marks[i].at, (uint32_t)compressed_marks[i].value);
        }
        logged = 0;
        EXPECT(parse_exact(q, len, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "compressed entry %zu was taken", i);
        EXPECT(logged == 1, "compressed entry %zu: %d log lines, expected 1", i, logged);
        free(q);
    }
    logged = 0;
    EXPECT(parse_exact(compressed->bytes, compressed->size, any, NULL) == CUDA_ERROR_INVALID_IMAGE,
           "nvcc's compressed fatbin was taken");
    EXPECT(logged == 1, "nvcc's compressed fatbin: %d log lines, expected 1", logged);
    free(p);

    const image ptx = {(unsigned char *)".version 9.0\n.target sm_90\n", 27};
    p = wrap(1, &ptx, 0x11, &len);
    logged = 0;
    EXPECT(parse_exact(p, len, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "a fatbin of PTX alone was taken");
    EXPECT(logged == 1, "a fatbin of PTX alone: %d log lines, expected 1", logged);
    logged = 0;
    free(p);
}

static Elf64_Ehdr elf_header(const image *im) {
    Elf64_Ehdr h;
    memcpy(&h, im->bytes, sizeof(h));
    return h;
}

/* The cubin with one field of its ELF made absurd, each refused, with and without a length. */
static void test_elf_fields(const image *cubin) {
    unsigned char *p = malloc(cubin->size);
    if (p == NULL) {
        exit(3);
    }
    Elf64_Ehdr h = elf_header(cubin);
    size_t symtab = 0, strtab = 0;
    for (size_t i = 0; i < h.e_shnum; i++) {
        Elf64_Shdr sh;
        memcpy(&sh, cubin->bytes + h.e_shoff + i * sizeof(sh), sizeof(sh));
        if (sh.sh_type == SHT_SYMTAB) {
            symtab = h.e_shoff + i * sizeof(sh);
            strtab = h.e_shoff + sh.sh_link * sizeof(sh);
        }
    }
    EXPECT(symtab > 0, "the cubin has no symbol table");
    const struct {
        const char *what;
        size_t at, width;
        uint64_t value;
    } cases[] = {
        {"a 32-bit class", EI_CLASS, 1, ELFCLASS32},
        {"big-endian data", EI_DATA, 1, ELFDATA2MSB},
        {"an x86-64 machine", offsetof(Elf64_Ehdr, e_machine), 2, EM_X86_64},
        {"section headers at 2^40", offsetof(Elf64_Ehdr, e_shoff), 8, UINT64_C(1) << 40},
        {"section headers past the end", offsetof(Elf64_Ehdr, e_shoff), 8, cubin->size},
        {"a section header size of 40", offsetof(Elf64_Ehdr, e_shentsize), 2, 40},
        {"no sections", offsetof(Elf64_Ehdr, e_shnum), 2, 0},
        {"65535 sections", offsetof(Elf64_Ehdr, e_shnum), 2, 65535},
        {"program headers at 2^40", offsetof(Elf64_Ehdr, e_phoff), 8, UINT64_C(1) << 40},
        {"a symbol table at 2^40", symtab + offsetof(Elf64_Shdr, sh_offset), 8, UINT64_C(1) << 40},
        {"a symbol table of 2^63 bytes", symtab + offsetof(Elf64_Shdr, sh_size), 8, UINT64_C(1) << 63},
        {"symbols of 16 bytes", symtab + offsetof(Elf64_Shdr, sh_entsize), 8, 16},
        {"a string table link past the sections", symtab + offsetof(Elf64_Shdr, sh_link), 4, 60000},
        {"a string table of 2^40 bytes", strtab + offsetof(Elf64_Shdr, sh_size), 8, UINT64_C(1) << 40},
        {"a string table that is no string table", strtab + offsetof(Elf64_Shdr, sh_type), 4, SHT_PROGBITS},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(p, cubin->bytes, cubin->size);
        for (size_t b = 0; b < cases[i].width; b++) {
            p[cases[i].at + b] = (unsigned char)(cases[i].value >> (8 * b));
        }
        EXPECT(parse_exact(p, cubin->size, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "a cubin with %s was taken",
               cases[i].what);
    }
    /* A string table without a NUL after a function's name: its names would run off its end. */
    memcpy(p, cubin->bytes, cubin->size);
    Elf64_Shdr sh;
    memcpy(&sh, p + strtab, sizeof(sh));
    memset(p + sh.sh_offset, 'x', sh.sh_size);
    EXPECT(parse_exact(p, cubin->size, any, NULL) == CUDA_ERROR_INVALID_IMAGE,
           "a cubin whose string table has no NUL was taken");
    free(p);
}

static void test_text(void) {
    found f = {0};
    const char *good = "# a comment\n\nkernel long 10000\nkernel short 0.5\n";
    EXPECT(emu_image_parse(good, SIZE_MAX, collect, &f) == CUDA_SUCCESS, "the text module was refused");
    EXPECT(f.count == 2 && strcmp(f.names[0], "long") == 0 && f.block_ns[0] == 10000000 &&
               strcmp(f.names[1], "short") == 0 && f.block_ns[1] == 500,
           "the text module gave %d kernels", f.count);
    memset(&f, 0, sizeof(f));
    EXPECT(parse_exact((const unsigned char *)good, strlen(good) + 1, collect, &f) == CUDA_SUCCESS && f.count == 2,
           "the text module was refused with its length");
    EXPECT(parse_exact((const unsigned char *)good, strlen(good), any, NULL) == CUDA_ERROR_INVALID_IMAGE,
           "a text module without its NUL was taken");
    const char *bad[] = {"kernel k\n", "kernel k -1\n", "kernel k nan\n", "kernel k 1e8\n", "kernel k inf\n",
                         "launch k 1\n", "kernel k 1\nnonsense\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        EXPECT(emu_image_parse(bad[i], SIZE_MAX, any, NULL) == CUDA_ERROR_INVALID_IMAGE, "text %zu was taken", i);
    }
    /* Short texts that begin like a binary image's magic: compared byte by byte, never read past their NUL. */
    const unsigned char partial[][4] = {{0x7f, 'E', 0}, {0x50, 0xed, 0x55, 0}};
    for (size_t i = 0; i < 2; i++) {
        EXPECT(parse_exact(partial[i], strlen((const char *)partial[i]) + 1, any, NULL) == CUDA_ERROR_INVALID_IMAGE,
               "partial magic %zu was taken", i);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: module_image_test FATBIN CUBIN COMPRESSED_FATBIN\n");
        return 2;
    }
    image fatbin = read_file(argv[1]), cubin = read_file(argv[2]), compressed = read_file(argv[3]);
    test_real_images(&fatbin, &cubin);
    test_flips(&fatbin, "fatbin");
    test_flips(&cubin, "cubin");
    test_made_fatbins(&cubin, &compressed);
    test_elf_fields(&cubin);
    test_text();
    free(fatbin.bytes);
    free(cubin.bytes);
    free(compressed.bytes);
    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("module images: all passed\n");
    return 0;
}
