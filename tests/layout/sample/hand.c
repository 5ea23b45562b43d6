/* A fixture for tools/check-layout (make check-layout): a version test and
 * an offset by hand outside cpython/, which the ratchet must reject. */
int hand(const struct pyabi *abi, uintptr_t v)
{
	return abi->minor >= 12 ? (int)RD_PTR(v + 16) : 0;
}
