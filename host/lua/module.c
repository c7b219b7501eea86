int luaopen_snodo(void *L);
int luaopen_snodo(void *L) { (void)L; return 0; }
