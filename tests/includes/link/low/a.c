/* a.c - check-includes' link fixture: a file of the lower layer that
 * writes a variable the higher layer defines (make check-includes must
 * reject it). */
extern int high_var;
void low_fn(void);

void low_fn(void)
{
	high_var = 1;
}
