/*
 * Hand-written assembly without CFI directives, so no FDE covers it (see nofde_main.c): the table walk finds
 * "no unwind info" at each of these functions' return addresses.
 */
	.text

/* Keeps a frame pointer, as V8's builtins do: the frame-pointer step from here is right. */
	.globl asm_fp_trampoline
	.type asm_fp_trampoline, @function
asm_fp_trampoline:
	push %rbp
	mov %rsp, %rbp
	call c_spin
	pop %rbp
	ret
	.size asm_fp_trampoline, .-asm_fp_trampoline

/* Keeps no frame pointer: rbp still holds the caller's frame, so a frame-pointer step would skip the caller. */
	.globl asm_nofp_trampoline
	.type asm_nofp_trampoline, @function
asm_nofp_trampoline:
	sub $8, %rsp
	call c_spin
	add $8, %rsp
	ret
	.size asm_nofp_trampoline, .-asm_nofp_trampoline

/* Uses rbp as a scratch register, pointing at a plausible-looking frame outside the stack. */
	.globl asm_garbage_trampoline
	.type asm_garbage_trampoline, @function
asm_garbage_trampoline:
	push %rbp
	lea fake_frame(%rip), %rbp
	call c_spin
	pop %rbp
	ret
	.size asm_garbage_trampoline, .-asm_garbage_trampoline

	.data
	.balign 16
fake_frame:
	.quad 0x7ffffffff000 /* "saved rbp": above any stack address */
	.quad main           /* "return address": in executable code */

	.section .note.GNU-stack,"",@progbits
