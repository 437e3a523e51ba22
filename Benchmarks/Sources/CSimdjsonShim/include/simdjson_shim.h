// simdjson's DOM parser behind a plain C interface, so the JSON reading benchmark can put
// the fastest DOM parser there is beside our JSONReader as the ceiling (issue 15: our reader
// ≥ 0.25× simdjson) without Swift's C++ interop. simdjson is C++ only (Debian's
// libsimdjson-dev); only strata-bench links it, never the Strata package.
#ifndef SIMDJSON_SHIM_H
#define SIMDJSON_SHIM_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bytes simdjson may read past the end of the document (SIMDJSON_PADDING): a buffer passed
/// to `simdjson_dom_parse_count` holds the document and at least this many more bytes.
size_t simdjson_shim_padding(void);

/// Parses `length` bytes at `data` into simdjson's DOM (its tape) with a parser kept per
/// thread, so its buffers are allocated once, not per parse, and nothing is copied: `data`
/// must be readable for `length + simdjson_shim_padding()` bytes. Returns the number of
/// members or elements of the root (read from the tape, so the parse cannot be optimized
/// away), 0 for a scalar root, or -1 if the document is not valid JSON.
int64_t simdjson_dom_parse_count(const char *data, size_t length);

#ifdef __cplusplus
}
#endif
#endif
