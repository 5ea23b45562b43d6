/* bad.c - format-check's fixture: written against .clang-format on
 * purpose (make format-check must reject it). */
int   bad_fixture( int a ){ if(a) return a*2; return  0; }
