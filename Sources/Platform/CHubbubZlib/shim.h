// zlib plus static-inline wrappers for its init macros (deflateInit2/inflateInit2 are macros).
#ifndef HUBBUB_CZLIB_SHIM_H
#define HUBBUB_CZLIB_SHIM_H
#include <zlib.h>

static inline int hubbub_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int hubbub_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
