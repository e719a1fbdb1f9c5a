/* A libjvm.so that lies (HostileProcessTest): it exports the symbols through which a profiler finds HotSpot's
 * self-description (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants, gHotSpotVMLongConstants and the
 * gHotSpotVM*Entry*Offset / *ArrayStride variables that give their entries' layout), laid out as JDK 25 lays them,
 * with tables that describe something no JVM would. Which lie is chosen by LOUPE_FAKE_JVM when the library loads:
 *
 *   unmapped-names  the VMStructs entries' name pointers point at a page that was unmapped;
 *   huge-heap       a code heap whose committed range is 4 TiB;
 *   big-segmap      a code heap of 4 GiB at 16-byte segments: a segment map of 256 MiB;
 *   endless-table   gHotSpotVMIntConstants has no terminating entry: 4 MiB of copies of one entry;
 *   self-loop       a code cache that reads well (one heap over the RWX page where fake_jvm_spin runs, one nmethod
 *                   there) whose nmethod's Method* points at a Method whose every pointer is itself, and whose
 *                   strings name a Java class and method ("EvilJava.lie") that nothing may show.
 *
 * fake_jvm_main spins on the CPU: in fake_jvm_spin (file-backed code), or for self-loop in code copied to the
 * anonymous RWX page the lying code heap describes. Built -shared -fPIC as DIR/libjvm.so. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    const char *typeName, *fieldName, *typeString;
    int32_t isStatic;
    uint64_t offset;
    void *address;
} VMStructEntry;

typedef struct {
    const char *typeName, *superclassName;
    int32_t isOopType, isIntegerType, isUnsigned;
    uint64_t size;
} VMTypeEntry;

typedef struct {
    const char *name;
    int32_t value;
} VMIntConstantEntry;

typedef struct {
    const char *name;
    uint64_t value;
} VMLongConstantEntry;

EXPORT VMStructEntry *gHotSpotVMStructs;
EXPORT uint64_t gHotSpotVMStructEntryArrayStride = sizeof(VMStructEntry);
EXPORT uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(VMStructEntry, typeName);
EXPORT uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(VMStructEntry, fieldName);
EXPORT uint64_t gHotSpotVMStructEntryTypeStringOffset = offsetof(VMStructEntry, typeString);
EXPORT uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(VMStructEntry, isStatic);
EXPORT uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(VMStructEntry, offset);
EXPORT uint64_t gHotSpotVMStructEntryAddressOffset = offsetof(VMStructEntry, address);
EXPORT VMTypeEntry *gHotSpotVMTypes;
EXPORT uint64_t gHotSpotVMTypeEntryArrayStride = sizeof(VMTypeEntry);
EXPORT uint64_t gHotSpotVMTypeEntryTypeNameOffset = offsetof(VMTypeEntry, typeName);
EXPORT uint64_t gHotSpotVMTypeEntrySuperclassNameOffset = offsetof(VMTypeEntry, superclassName);
EXPORT uint64_t gHotSpotVMTypeEntryIsOopTypeOffset = offsetof(VMTypeEntry, isOopType);
EXPORT uint64_t gHotSpotVMTypeEntryIsIntegerTypeOffset = offsetof(VMTypeEntry, isIntegerType);
EXPORT uint64_t gHotSpotVMTypeEntryIsUnsignedOffset = offsetof(VMTypeEntry, isUnsigned);
EXPORT uint64_t gHotSpotVMTypeEntrySizeOffset = offsetof(VMTypeEntry, size);
EXPORT VMIntConstantEntry *gHotSpotVMIntConstants;
EXPORT uint64_t gHotSpotVMIntConstantEntryArrayStride = sizeof(VMIntConstantEntry);
EXPORT uint64_t gHotSpotVMIntConstantEntryNameOffset = offsetof(VMIntConstantEntry, name);
EXPORT uint64_t gHotSpotVMIntConstantEntryValueOffset = offsetof(VMIntConstantEntry, value);
EXPORT VMLongConstantEntry *gHotSpotVMLongConstants;
EXPORT uint64_t gHotSpotVMLongConstantEntryArrayStride = sizeof(VMLongConstantEntry);
EXPORT uint64_t gHotSpotVMLongConstantEntryNameOffset = offsetof(VMLongConstantEntry, name);
EXPORT uint64_t gHotSpotVMLongConstantEntryValueOffset = offsetof(VMLongConstantEntry, value);

/* The static fields the table gives addresses of. */
static void *code_cache_heaps;      /* CodeCache::_heaps: a GrowableArray<CodeHeap*>* */
static const char *vm_release = "25-lying-jvm";

/* JDK 25's offsets and sizes (as in its own table), for the fields a profiler reads. */
#define CODEHEAP_SIZE 336
#define CODEHEAP_MEMORY 0
#define CODEHEAP_SEGMAP 112
#define CODEHEAP_LOG2 248
#define VS_LOW 16
#define VS_HIGH 24
#define BLOB_NAME 8
#define BLOB_MUTABLE 16
#define BLOB_SIZE 24
#define BLOB_RELOC 28
#define BLOB_CODE_OFFSET 36
#define BLOB_DATA_OFFSET 40
#define BLOB_FRAME_SIZE 44
#define BLOB_MUTABLE_SIZE 48
#define BLOB_FRAME_COMPLETE 54
#define BLOB_KIND 56
#define NM_METHOD 80
#define NM_IMMUTABLE 96
#define NM_IMMUTABLE_SIZE 160
#define NM_PCS 196
#define NM_SCOPES 200
#define NM_COMPILE_ID 212
#define NM_SIZE 224

static VMStructEntry structs[] = {
    {"CodeCache", "_heaps", "GrowableArray<CodeHeap*>*", 1, 0, &code_cache_heaps},
    {"GrowableArrayBase", "_len", "int", 0, 0, NULL},
    {"GrowableArray<int>", "_data", "int*", 0, 8, NULL},
    {"CodeHeap", "_memory", "VirtualSpace", 0, CODEHEAP_MEMORY, NULL},
    {"CodeHeap", "_segmap", "VirtualSpace", 0, CODEHEAP_SEGMAP, NULL},
    {"CodeHeap", "_log2_segment_size", "int", 0, CODEHEAP_LOG2, NULL},
    {"VirtualSpace", "_low", "char*", 0, VS_LOW, NULL},
    {"VirtualSpace", "_high", "char*", 0, VS_HIGH, NULL},
    {"HeapBlock", "_header", "HeapBlock::Header", 0, 0, NULL},
    {"HeapBlock::Header", "_length", "uint32_t", 0, 0, NULL},
    {"HeapBlock::Header", "_used", "bool", 0, 4, NULL},
    {"CodeBlob", "_name", "const char*", 0, BLOB_NAME, NULL},
    {"CodeBlob", "_mutable_data", "address", 0, BLOB_MUTABLE, NULL},
    {"CodeBlob", "_size", "int", 0, BLOB_SIZE, NULL},
    {"CodeBlob", "_relocation_size", "int", 0, BLOB_RELOC, NULL},
    {"CodeBlob", "_code_offset", "int", 0, BLOB_CODE_OFFSET, NULL},
    {"CodeBlob", "_data_offset", "int", 0, BLOB_DATA_OFFSET, NULL},
    {"CodeBlob", "_frame_size", "int", 0, BLOB_FRAME_SIZE, NULL},
    {"CodeBlob", "_mutable_data_size", "int", 0, BLOB_MUTABLE_SIZE, NULL},
    {"CodeBlob", "_frame_complete_offset", "int16_t", 0, BLOB_FRAME_COMPLETE, NULL},
    {"CodeBlob", "_kind", "CodeBlobKind", 0, BLOB_KIND, NULL},
    {"nmethod", "_method", "Method*", 0, NM_METHOD, NULL},
    {"nmethod", "_immutable_data", "address", 0, NM_IMMUTABLE, NULL},
    {"nmethod", "_immutable_data_size", "int", 0, NM_IMMUTABLE_SIZE, NULL},
    {"nmethod", "_scopes_pcs_offset", "int", 0, NM_PCS, NULL},
    {"nmethod", "_scopes_data_offset", "int", 0, NM_SCOPES, NULL},
    {"nmethod", "_compile_id", "int", 0, NM_COMPILE_ID, NULL},
    {"Method", "_constMethod", "ConstMethod*", 0, 8, NULL},
    {"ConstMethod", "_constants", "ConstantPool*", 0, 8, NULL},
    {"ConstMethod", "_name_index", "u2", 0, 36, NULL},
    {"ConstantPool", "_tags", "Array<u1>*", 0, 8, NULL},
    {"ConstantPool", "_pool_holder", "InstanceKlass*", 0, 24, NULL},
    {"ConstantPool", "_length", "int", 0, 60, NULL},
    {"Array<u1>", "_data", "", 0, 4, NULL},
    {"Klass", "_name", "Symbol*", 0, 24, NULL},
    {"Symbol", "_length", "u2", 0, 4, NULL},
    {"Symbol", "_body", "", 0, 6, NULL},
    {"Abstract_VM_Version", "_s_vm_release", "const char*", 1, 0, &vm_release},
    {"PcDesc", "_pc_offset", "int", 0, 0, NULL},
    {"PcDesc", "_scope_decode_offset", "int", 0, 4, NULL},
    {NULL, NULL, NULL, 0, 0, NULL},
};

static VMTypeEntry types[] = {
    {"CodeHeap", NULL, 0, 0, 0, CODEHEAP_SIZE},
    {"VirtualSpace", NULL, 0, 0, 0, 112},
    {"HeapBlock", NULL, 0, 0, 0, 8},
    {"CodeBlob", NULL, 0, 0, 0, 64},
    {"RuntimeBlob", "CodeBlob", 0, 0, 0, 64},
    {"BufferBlob", "RuntimeBlob", 0, 0, 0, 64},
    {"nmethod", "CodeBlob", 0, 0, 0, NM_SIZE},
    {"MetaspaceObj", NULL, 0, 0, 0, 1},
    {"Metadata", "MetaspaceObj", 0, 0, 0, 8},
    {"Method", "Metadata", 0, 0, 0, 88},
    {"ConstMethod", "MetaspaceObj", 0, 0, 0, 56},
    {"ConstantPool", "Metadata", 0, 0, 0, 72},
    {"Klass", "Metadata", 0, 0, 0, 200},
    {"Symbol", NULL, 0, 0, 0, 8},
    {"Array<u1>", "MetaspaceObj", 0, 0, 0, 8},
    {"PcDesc", NULL, 0, 0, 0, 16},
    {NULL, NULL, 0, 0, 0, 0},
};

static VMIntConstantEntry ints[] = {
    {"CodeBlobKind::Nmethod", 1}, {"CodeBlobKind::Buffer", 2}, {"CodeBlobKind::Adapter", 3},
    {"CodeBlobKind::MHAdapter", 5}, {"CodeBlobKind::RuntimeStub", 6}, {"JVM_CONSTANT_Utf8", 1},
    {NULL, 0},
};

static VMLongConstantEntry longs[] = {{NULL, 0}};

static void put64(void *base, size_t off, uint64_t v) { memcpy((char *)base + off, &v, 8); }
static void put32(void *base, size_t off, uint32_t v) { memcpy((char *)base + off, &v, 4); }
static void put16(void *base, size_t off, uint16_t v) { memcpy((char *)base + off, &v, 2); }

static const char *lie = "";
static unsigned char *jit; /* self-loop: the RWX page the code heap describes */

/* A GrowableArray<CodeHeap*> of one heap of [low, high) with a segment map at segmap of log2-byte segments. */
static void one_heap(uint64_t low, uint64_t high, uint64_t segmap, uint64_t segmap_bytes, int log2) {
    unsigned char *heap = calloc(1, CODEHEAP_SIZE);
    put64(heap, CODEHEAP_MEMORY + VS_LOW, low);
    put64(heap, CODEHEAP_MEMORY + VS_HIGH, high);
    put64(heap, CODEHEAP_SEGMAP + VS_LOW, segmap);
    put64(heap, CODEHEAP_SEGMAP + VS_HIGH, segmap + segmap_bytes);
    put32(heap, CODEHEAP_LOG2, log2);
    void **data = calloc(1, sizeof(void *));
    data[0] = heap;
    unsigned char *array = calloc(1, 16);
    put32(array, 0, 1);
    put64(array, 8, (uint64_t)data);
    code_cache_heaps = array;
}

/* The self-loop code cache: one 4 KiB heap over the RWX page, 64-byte segments, one nmethod in the first block. */
static void self_loop(void) {
    jit = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (jit == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    unsigned char *segmap = malloc(64);
    memset(segmap, 0xFF, 64);
    for (int i = 0; i < 16; i++) segmap[i] = i; /* a block of 16 segments (1 KiB) from the start */
    put32(jit, 0, 16);                          /* HeapBlock::Header: _length 16, _used */
    jit[4] = 1;
    unsigned char *blob = jit + 8;
    put64(blob, BLOB_NAME, (uint64_t)"nmethod");
    put32(blob, BLOB_SIZE, 1024 - 8);
    put32(blob, BLOB_CODE_OFFSET, NM_SIZE);
    put32(blob, BLOB_DATA_OFFSET, NM_SIZE + 64);
    put32(blob, BLOB_FRAME_SIZE, 2);            /* 16 bytes: the return address and the saved rbp, as the code does */
    put16(blob, BLOB_FRAME_COMPLETE, 4);
    blob[BLOB_KIND] = 1;                        /* CodeBlobKind::Nmethod */
    put32(blob, NM_COMPILE_ID, 7);
    /* A Method whose every pointer-sized word is its own address: ConstMethod, ConstantPool, Symbol, all itself. */
    uint64_t *method = aligned_alloc(64, 128);
    for (int i = 0; i < 16; i++) method[i] = (uint64_t)method;
    put64(blob, NM_METHOD, (uint64_t)method);
    /* Debug information that points at itself: immutable data whose PcDescs' scope offsets are 1 and whose scope
     * record names itself as its sender, and mutable data (the metadata) that is the nmethod. */
    unsigned char *imm = calloc(1, 64);
    int32_t descs[8] = {-1, 0, 0, 0, 0x7fffffff, 1, 0, 0};
    memcpy(imm, descs, sizeof(descs));
    imm[32] = 1; imm[33] = 2; imm[34] = 2; imm[35] = 2; /* sender 1 (itself), index 1, bci 1, as JDK 21+ encodes */
    put64(blob, NM_IMMUTABLE, (uint64_t)imm);
    put32(blob, NM_PCS, 0);
    put32(blob, NM_SCOPES, 32);
    put32(blob, NM_IMMUTABLE_SIZE, 64);
    put64(blob, BLOB_MUTABLE, (uint64_t)blob);
    put32(blob, BLOB_RELOC, 0);
    put32(blob, BLOB_MUTABLE_SIZE, 64);
    /* The code: push %rbp; mov %rsp,%rbp; 1: inc %rax; jmp 1b */
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xff, 0xc0, 0xeb, 0xfb};
    memcpy(blob + NM_SIZE, code, sizeof(code));
    one_heap((uint64_t)jit, (uint64_t)jit + 4096, (uint64_t)segmap, 64, 6);
    /* Strings a lying JVM would have its frames named by: nothing may show them. */
    static const char evil[] = "\0\0\0\0\x08\0EvilJava\0\0\0\0\x03\0lie";
    put64(method, 64, (uint64_t)evil);
}

__attribute__((constructor)) static void init(void) {
    const char *l = getenv("LOUPE_FAKE_JVM");
    lie = l ? l : "";
    gHotSpotVMStructs = structs;
    gHotSpotVMTypes = types;
    gHotSpotVMIntConstants = ints;
    gHotSpotVMLongConstants = longs;
    if (strcmp(lie, "unmapped-names") == 0) {
        void *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(page, 4096);
        for (VMStructEntry *e = structs; e->typeName; e++) {
            e->typeName = (const char *)page + 16;
            e->fieldName = (const char *)page + 32;
        }
    } else if (strcmp(lie, "huge-heap") == 0) {
        unsigned char *segmap = calloc(1, 4096);
        one_heap(0x100000000000ULL, 0x100000000000ULL + (4ULL << 40), (uint64_t)segmap, 4ULL << 40 >> 6, 6);
    } else if (strcmp(lie, "big-segmap") == 0) {
        unsigned char *segmap = calloc(1, 4096);
        one_heap(0x200000000000ULL, 0x200000000000ULL + (4ULL << 30), (uint64_t)segmap, 4ULL << 30 >> 4, 4);
    } else if (strcmp(lie, "endless-table") == 0) {
        size_t n = (4 << 20) / sizeof(VMIntConstantEntry);
        VMIntConstantEntry *endless = mmap(NULL, n * sizeof(VMIntConstantEntry), PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (size_t i = 0; i < n; i++) endless[i] = ints[0];
        gHotSpotVMIntConstants = endless;
    } else if (strcmp(lie, "self-loop") == 0) {
        self_loop();
    } else {
        fprintf(stderr, "LOUPE_FAKE_JVM: unknown lie '%s'\n", lie);
        exit(2);
    }
}

static volatile unsigned long sink;

EXPORT __attribute__((noinline)) void fake_jvm_spin(void) {
    for (;;) {
        unsigned long x = sink;
        for (int i = 0; i < 1000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        sink = x;
    }
}

EXPORT __attribute__((noinline)) int fake_jvm_main(void) {
    printf("ready %s\n", lie);
    fflush(stdout);
    if (jit != NULL) {
        ((void (*)(void))(jit + 8 + NM_SIZE))();
    }
    fake_jvm_spin();
    return 0;
}
