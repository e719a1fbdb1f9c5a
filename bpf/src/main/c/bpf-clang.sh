#!/bin/sh
# The one clang command line for BPF objects: the build's (bpf/pom.xml: the shipped programs and the test-only
# uprobe counter) and the tests' (BpfClang: objects from a drifted header). -g keeps the BTF that KernelAbi and
# LatencyAbi check; the x86-64 multiarch directory holds the asm/ headers that linux/bpf.h includes.
#   bpf-clang.sh [-I DIR]... -c SOURCE.bpf.c -o OBJECT.o
exec clang -g -O2 -target bpf -D__TARGET_ARCH_x86 -I/usr/include/x86_64-linux-gnu -Wall -Werror "$@"
