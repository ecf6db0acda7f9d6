/*
 * A stand-in for bcryptprimitives.dll, which Wine 8 does not ship. The Go
 * runtime (since Go 1.22) loads it at start-up and takes all of its
 * randomness from ProcessPrng; without it every Go program dies before
 * main. This forwards to BCryptGenRandom with the system RNG, which Wine
 * has. It is test tooling only: real Windows has the real DLL.
 */
#include <windows.h>
#include <bcrypt.h>

BOOL WINAPI ProcessPrng(PBYTE buf, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x7fffffff ? 0x7fffffff : (ULONG)len;
		if (BCryptGenRandom(NULL, buf, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
			return FALSE;
		buf += n;
		len -= n;
	}
	return TRUE;
}
