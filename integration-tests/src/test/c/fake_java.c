/* A program that loads a libjvm.so (fake_libjvm.c, linked as -ljvm) and spins in it: what a lying JVM looks like
 * from outside (HostileProcessTest). */
int fake_jvm_main(void);

int main(void) { return fake_jvm_main(); }
