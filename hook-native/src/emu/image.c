/*
 * Module images: the emulator's text format, NVIDIA fatbins and bare ELF cubins (image.h).
 *
 * The fatbin layout below was read off images nvcc 13.0 built here (`nvcc --fatbin`, with and without
 * `--no-compress`, for sm_80, sm_90 and compute_90) and matches what cuobjdump lists for them; NVIDIA does not
 * document it. All fields little-endian.
 *
 *   header, 16 bytes:  u32 magic 0xBA55ED50 | u16 version (1) | u16 header size (16) | u64 size of the entries
 *   entry header, 64 bytes for ELF and 80 for PTX (the size is in the header; we read the first 64):
 *     +0  u16 kind: 1 PTX, 2 ELF            +2  u16 0x0101 on every entry seen
 *     +4  u32 entry header size             +8  u64 payload size (the payload follows the entry header)
 *     +16 u32 compressed size, 0 if not     +20 u32 0 (ELF), 64 (PTX)
 *     +24 u16 minor, +26 u16 major: 1.8 for the cubins, 9.0 (the PTX ISA) for PTX
 *     +28 u32 architecture (80, 90)         +32 u32 name offset, +36 u32 name length: 0
 *     +40 u64 flags: 0x11 (64-bit | Linux); 0x8011 on the entry nvcc compressed (zstd)
 *     +48 u64 0                             +56 u64 size decompressed, 0 if not compressed
 *   entries follow each other with no padding and end exactly at 16 + size.
 *
 * Only cubins are read (their .symtab names the kernels); PTX entries are stepped over. Compressed entries are
 * refused rather than decompressed: nvcc's --no-compress is the supported way to build for the emulator.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "shared.h"

#define FATBIN_HEADER_BYTES 16
#define FATBIN_ENTRY_BYTES 64 /* the part of an entry header we read; PTX entries have 16 more bytes */
#define FATBIN_KIND_ELF 2
/* 0x8000 was seen on nvcc 13.0's compressed entries; 0x2000 is the older (LZ4) compression flag. */
#define FATBIN_FLAGS_COMPRESSED UINT64_C(0xa000)

static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba};
static const unsigned char elf_magic[4] = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3};

/* Compares byte by byte and stops at the first difference, so a short text image is never read past its NUL. */
static int starts_with(const unsigned char *p, size_t limit, const unsigned char *magic, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i >= limit || p[i] != magic[i]) {
            return 0;
        }
    }
    return 1;
}

/* [off, off + len) lies inside [0, limit). */
static int inside(uint64_t off, uint64_t len, uint64_t limit) {
    return off <= limit && len <= limit - off;
}

static uint16_t le16(const unsigned char *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const unsigned char *p) {
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The global functions of one symbol table whose header is `sh`. */
static CUresult symbols(const unsigned char *p, uint64_t limit, const Elf64_Shdr *sh, const Elf64_Shdr *strtab,
                        emu_image_kernel_fn kernel, void *ctx) {
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size % sizeof(Elf64_Sym) != 0 ||
        !inside(sh->sh_offset, sh->sh_size, limit) || strtab->sh_type != SHT_STRTAB ||
        !inside(strtab->sh_offset, strtab->sh_size, limit)) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const char *names = (const char *)p + strtab->sh_offset;
    for (uint64_t off = 0; off < sh->sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym sym;
        memcpy(&sym, p + sh->sh_offset + off, sizeof(sym)); /* images need not be aligned */
        if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || ELF64_ST_BIND(sym.st_info) != STB_GLOBAL) {
            continue;
        }
        if (sym.st_name >= strtab->sh_size) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        const char *name = names + sym.st_name;
        const char *nul = memchr(name, '\0', strtab->sh_size - sym.st_name);
        if (nul == NULL) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if (nul > name) {
            CUresult rc = kernel(ctx, name, (size_t)(nul - name), 0);
            if (rc != CUDA_SUCCESS) {
                return rc;
            }
        }
    }
    return CUDA_SUCCESS;
}

/*
 * A cubin: a 64-bit little-endian ELF for EM_CUDA. `bare` when it came alone, not inside a fatbin: it then has
 * no size but its own, taken as the end of its header tables (nvcc and nvlink put the tables after the
 * sections), so its sections must lie before that.
 */
static CUresult parse_elf(const unsigned char *p, uint64_t limit, int bare, emu_image_kernel_fn kernel, void *ctx) {
    Elf64_Ehdr h;
    if (limit < sizeof(h)) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    memcpy(&h, p, sizeof(h));
    if (!starts_with(h.e_ident, EI_NIDENT, elf_magic, sizeof(elf_magic)) || h.e_ident[EI_CLASS] != ELFCLASS64 ||
        h.e_ident[EI_DATA] != ELFDATA2LSB || h.e_machine != EM_CUDA || h.e_shentsize != sizeof(Elf64_Shdr) ||
        h.e_shnum == 0) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint64_t section_table = (uint64_t)h.e_shnum * sizeof(Elf64_Shdr); /* < 2^22: no overflow below */
    uint64_t program_table = (uint64_t)h.e_phnum * h.e_phentsize;
    if (h.e_shoff > EMU_IMAGE_MAX_BYTES || (h.e_phnum > 0 && h.e_phoff > EMU_IMAGE_MAX_BYTES)) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint64_t extent = h.e_shoff + section_table;
    if (h.e_phnum > 0 && h.e_phoff + program_table > extent) {
        extent = h.e_phoff + program_table;
    }
    if (bare && extent < limit) {
        limit = extent;
    }
    if (extent > EMU_IMAGE_MAX_BYTES || extent > limit) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    int tables = 0;
    for (uint16_t i = 0; i < h.e_shnum; i++) {
        Elf64_Shdr sh, strtab;
        memcpy(&sh, p + h.e_shoff + (uint64_t)i * sizeof(sh), sizeof(sh));
        if (sh.sh_type != SHT_SYMTAB) {
            continue;
        }
        if (sh.sh_link >= h.e_shnum) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        memcpy(&strtab, p + h.e_shoff + (uint64_t)sh.sh_link * sizeof(strtab), sizeof(strtab));
        CUresult rc = symbols(p, limit, &sh, &strtab, kernel, ctx);
        if (rc != CUDA_SUCCESS) {
            return rc;
        }
        tables++;
    }
    return tables > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE; /* every cubin nvcc makes has one */
}

static CUresult parse_fatbin(const unsigned char *p, uint64_t limit, emu_image_kernel_fn kernel, void *ctx) {
    if (limit < FATBIN_HEADER_BYTES) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint16_t version = le16(p + 4), header = le16(p + 6);
    uint64_t size = le64(p + 8);
    if (version != 1 || header < FATBIN_HEADER_BYTES || size > EMU_IMAGE_MAX_BYTES || !inside(header, size, limit)) {
        return CUDA_ERROR_INVALID_IMAGE;
    }
    uint64_t end = header + size;
    int cubins = 0;
    for (uint64_t off = header; off < end;) {
        const unsigned char *e = p + off;
        if (end - off < FATBIN_ENTRY_BYTES) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        uint32_t entry_header = le32(e + 4);
        uint64_t payload = le64(e + 8);
        if (entry_header < FATBIN_ENTRY_BYTES || !inside(entry_header, payload, end - off)) {
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if ((le64(e + 40) & FATBIN_FLAGS_COMPRESSED) != 0 || le32(e + 16) != 0 || le64(e + 56) != 0) {
            emu_log("a module image holds a compressed fatbin entry, which the emulator cannot read: "
                    "build it with nvcc --no-compress");
            return CUDA_ERROR_INVALID_IMAGE;
        }
        if (le16(e) == FATBIN_KIND_ELF) {
            CUresult rc = parse_elf(e + entry_header, payload, 0, kernel, ctx);
            if (rc != CUDA_SUCCESS) {
                return rc;
            }
            cubins++;
        }
        off += entry_header + payload;
    }
    if (cubins == 0) {
        emu_log("a fatbin module image holds no cubin (only PTX, which the emulator does not read): "
                "build it with -gencode arch=compute_XX,code=sm_XX");
        return CUDA_ERROR_INVALID_IMAGE;
    }
    return CUDA_SUCCESS;
}

/* The text format: one "kernel <name> <block_us>" per line; '#' lines and empty lines are skipped. */
static CUresult parse_text(const char *image, size_t limit, emu_image_kernel_fn kernel, void *ctx) {
    size_t n = strnlen(image, limit);
    if (n == limit) {
        return CUDA_ERROR_INVALID_IMAGE; /* no terminating NUL within what may be read */
    }
    char *copy = malloc(n + 1);
    if (copy == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(copy, image, n + 1);
    CUresult rc = CUDA_SUCCESS;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL && rc == CUDA_SUCCESS;
         line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        double block_us;
        if (line[0] == '#' || line[0] == '\0') {
            continue;
        }
        /* The bound keeps the conversion to nanoseconds defined: NaN, negative and huge times are refused. */
        if (sscanf(line, "kernel %63s %lf", name, &block_us) != 2 || !(block_us >= 0 && block_us <= EMU_MAX_BLOCK_US)) {
            rc = CUDA_ERROR_INVALID_IMAGE;
            break;
        }
        rc = kernel(ctx, name, strlen(name), (uint64_t)(block_us * 1000.0 + 0.5));
    }
    free(copy);
    return rc;
}

CUresult emu_image_parse(const void *image, size_t limit, emu_image_kernel_fn kernel, void *ctx) {
    const unsigned char *p = image;
    if (image == NULL || kernel == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (starts_with(p, limit, fatbin_magic, sizeof(fatbin_magic))) {
        return parse_fatbin(p, limit, kernel, ctx);
    }
    if (starts_with(p, limit, elf_magic, sizeof(elf_magic))) {
        return parse_elf(p, limit, 1, kernel, ctx);
    }
    return parse_text(image, limit, kernel, ctx);
}
