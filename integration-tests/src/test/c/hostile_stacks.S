/*
 * Stacks that lie (HostileProcessTest, with hostile_stacks.c): hand-written assembly without CFI directives, so
 * no FDE covers it and a walker takes frame-pointer steps here. Each *_spin never returns and leaves its frame
 * pointer chain broken on purpose:
 *   cycle1_spin    its saved rbp is its own address: [rbp] == rbp (a 1-cycle);
 *   cycle2_spin    rbp points at A, [A] = B and [B] = A, both with its return address (a 2-cycle);
 *   unmapped_rbp_spin   rbp points at a page that is not mapped;
 *   unmapped_ret_spin   its frame's return address is an address that is not mapped, its saved rbp 8.
 * Each is called from an *_outer that keeps a frame pointer and has no FDE either, so a cycle is walked again.
 */
	.text

	.macro OUTER name, spin
	.globl \name
	.type \name, @function
\name:
	push %rbp
	mov %rsp, %rbp
	call \spin
	pop %rbp
	ret
	.size \name, .-\name
	.endm

	OUTER cycle1_outer, cycle1_spin
	OUTER cycle2_outer, cycle2_spin
	OUTER unmapped_rbp_outer, unmapped_rbp_spin
	OUTER unmapped_ret_outer, unmapped_ret_spin

	.globl cycle1_spin
	.type cycle1_spin, @function
cycle1_spin:
	push %rbp
	mov %rsp, %rbp
	mov %rbp, (%rbp)
1:	imul $31, %rax, %rax
	inc %rax
	jmp 1b
	.size cycle1_spin, .-cycle1_spin

	.globl cycle2_spin
	.type cycle2_spin, @function
cycle2_spin:
	push %rbp
	mov %rsp, %rbp
	sub $32, %rsp
	lea -32(%rbp), %rcx
	lea -16(%rbp), %rdx
	mov 8(%rbp), %rax
	mov %rdx, (%rcx)
	mov %rax, 8(%rcx)
	mov %rcx, (%rdx)
	mov %rax, 8(%rdx)
	mov %rcx, %rbp
1:	imul $31, %r8, %r8
	inc %r8
	jmp 1b
	.size cycle2_spin, .-cycle2_spin

	.globl unmapped_rbp_spin
	.type unmapped_rbp_spin, @function
unmapped_rbp_spin:
	push %rbp
	mov %rdi, %rbp		/* the caller's unmapped page */
1:	imul $31, %rax, %rax
	inc %rax
	jmp 1b
	.size unmapped_rbp_spin, .-unmapped_rbp_spin

	.globl unmapped_ret_spin
	.type unmapped_ret_spin, @function
unmapped_ret_spin:
	push %rbp
	mov %rsp, %rbp
	sub $16, %rsp
	movq $8, -16(%rbp)
	mov %rdi, -8(%rbp)	/* "return address": the unmapped page */
	lea -16(%rbp), %rbp
1:	imul $31, %rax, %rax
	inc %rax
	jmp 1b
	.size unmapped_ret_spin, .-unmapped_ret_spin

	.section .note.GNU-stack,"",@progbits
