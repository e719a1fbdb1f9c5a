/**
 * Reading Go binaries (and any ELF x86-64 binary's machine code) for function probes, without BPF:
 * {@link dev.loupe.unwinder.golang.GoBuildInfo} (Go version), {@link dev.loupe.unwinder.golang.GoPclntab}
 * (function table of stripped binaries), {@link dev.loupe.unwinder.golang.GoRuntimeOffsets} (where the
 * goroutine id is), {@link dev.loupe.unwinder.golang.X86InstructionLength} and
 * {@link dev.loupe.unwinder.golang.ReturnFinder} (return instructions by decoding, never by byte search),
 * and {@link dev.loupe.unwinder.golang.FunctionResolver}, which turns "binary + name or glob" into uprobe
 * file offsets: the entry and every RET.
 */
package dev.loupe.unwinder.golang;
