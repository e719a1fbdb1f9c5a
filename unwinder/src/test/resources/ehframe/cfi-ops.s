# Hand-written CFI covering the DW_CFA ops, DWARF64 and v3/v4 CIEs in .debug_frame, and pointer
# encodings / augmentations (zPLR with indirect personality, udata8, pcrel sdata8, S) in .eh_frame.
# Built by DebugFrameTest with: gcc -nostartfiles -no-pie -Wl,-e,main
	.text
	.globl	main
	.type	main, @function
main:
	push	%rbp
	mov	%rsp, %rbp
	sub	$32, %rsp
	.fill 56, 1, 0x90
	xor	%eax, %eax
	leave
	ret
.Lmain_end:
	.size	main, .-main
	.globl	other
	.type	other, @function
other:
	.fill 40, 1, 0x90
	ret
.Lother_end:
	.size	other, .-other

	.globl	e1
	.type	e1, @function
e1:
	.fill 24, 1, 0x90
	ret
.Le1_end:
	.globl	e2
	.type	e2, @function
e2:
	.fill 24, 1, 0x90
	ret
.Le2_end:
	.globl	e3
	.type	e3, @function
e3:
	.fill 24, 1, 0x90
	ret
.Le3_end:
	.section	.rodata
	.balign 8
.Lpersonality:
	.quad	0
.Llsda:
	.quad	0

	.section	.eh_frame,"a",@progbits
.Lecie1:
	.long	.Lecie1_end - .Lecie1_start
.Lecie1_start:
	.long	0
	.byte	1
	.asciz	"zPLR"
	.uleb128 1
	.sleb128 -8
	.byte	16
	.uleb128 7
	.byte	0x9b
	.long	.Lpersonality - .
	.byte	0x1b
	.byte	0x1c
	.byte	0x0c, 7, 8, 0x90, 1
	.balign 8, 0
.Lecie1_end:
	.long	.Lefde1_end - .Lefde1_start
.Lefde1_start:
	.long	.Lefde1_start - .Lecie1
	.quad	e1 - .
	.quad	.Le1_end - e1
	.uleb128 4
	.long	.Llsda - .
	.byte	0x41, 0x0e, 16, 0x42, 0x0e, 24
	.balign 8, 0
.Lefde1_end:
.Lecie2:
	.long	.Lecie2_end - .Lecie2_start
.Lecie2_start:
	.long	0
	.byte	3
	.asciz	"zR"
	.uleb128 1
	.sleb128 -8
	.uleb128 16
	.uleb128 1
	.byte	0x04
	.byte	0x0c, 7, 8, 0x90, 1
	.balign 8, 0
.Lecie2_end:
	.long	.Lefde2_end - .Lefde2_start
.Lefde2_start:
	.long	.Lefde2_start - .Lecie2
	.quad	e2
	.quad	.Le2_end - e2
	.uleb128 0
	.byte	0x43, 0x0e, 32
	.byte	0x01
	.quad	e2 + 10
	.byte	0x0e, 8
	.balign 8, 0
.Lefde2_end:
.Lecie3:
	.long	.Lecie3_end - .Lecie3_start
.Lecie3_start:
	.long	0
	.byte	1
	.asciz	"zRS"
	.uleb128 1
	.sleb128 -8
	.byte	16
	.uleb128 1
	.byte	0x1b
	.byte	0x0c, 7, 8, 0x90, 1
	.balign 8, 0
.Lecie3_end:
	.long	.Lefde3_end - .Lefde3_start
.Lefde3_start:
	.long	.Lefde3_start - .Lecie3
	.long	e3 - .
	.long	.Le3_end - e3
	.uleb128 0
	.byte	0x41, 0x0e, 16
	.balign 8, 0
.Lefde3_end:
	.long	0

	.section	.debug_frame,"",@progbits
.Lcie:
	.long	0xffffffff
	.quad	.Lcie_end - .Lcie_start
.Lcie_start:
	.quad	0xffffffffffffffff
	.byte	4
	.asciz	""
	.byte	8, 0
	.uleb128 1
	.sleb128 -8
	.uleb128 16
	.byte	0x0c, 7, 8
	.byte	0x90, 1
	.balign 8, 0
.Lcie_end:
	.long	0xffffffff
	.quad	.Lfde_end - .Lfde_start
.Lfde_start:
	.quad	.Lcie
	.quad	main
	.quad	.Lmain_end - main
	.byte	0x41, 0x0e, 16, 0x86, 2
	.byte	0x02, 3, 0x0d, 6
	.byte	0x03
	.short	2
	.byte	0x0a, 0x12, 7, 0x7e
	.byte	0x04
	.long	2
	.byte	0x0b, 0x42, 0x13, 0x7d
	.byte	0x01
	.quad	main+12
	.byte	0x14, 6, 3
	.byte	0x41, 0x2f, 6, 2
	.byte	0x41, 0x08, 6
	.byte	0x41, 0x05, 6, 2
	.byte	0x41, 0x06, 6
	.byte	0x41, 0x11, 6, 0x7e
	.byte	0x41, 0x15, 6, 0x01
	.byte	0x41, 0x09, 6, 3
	.byte	0x41, 0x16, 6, 2, 0x76, 0
	.byte	0x41, 0x10, 6, 2, 0x76, 0
	.byte	0x41, 0xc6
	.byte	0x41, 0x2e, 8
	.byte	0x41, 0x0c, 1, 8
	.byte	0x41, 0x0c, 6, 16
	.byte	0x41, 0x0f, 2, 0x77, 0x10
	.byte	0x41, 0x07, 16
	.byte	0x41, 0x08, 16
	.byte	0x41, 0x0c, 7, 8, 0x90, 1
	.byte	0x41, 0x14, 7, 0
	.byte	0x41, 0x90, 2
	.balign 8, 0
.Lfde_end:
.Lcie32:
	.long	.Lcie32_end - .Lcie32_start
.Lcie32_start:
	.long	0xffffffff
	.byte	3
	.asciz	""
	.uleb128 1
	.sleb128 -8
	.uleb128 16
	.byte	0x0c, 7, 8
	.byte	0x90, 1
	.balign 4, 0
.Lcie32_end:
	.long	.Lfde2_end - .Lfde2_start
.Lfde2_start:
	.long	.Lcie32
	.quad	other
	.quad	.Lother_end - other
	.byte	0x44, 0x0e, 16
	.balign 4, 0
.Lfde2_end:
	.section	.note.GNU-stack,"",@progbits
