/* b.c - check-includes' link fixture: the higher layer's variable. */
int high_var;
