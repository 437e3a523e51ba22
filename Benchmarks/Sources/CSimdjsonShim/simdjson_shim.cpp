// See include/simdjson_shim.h: simdjson's DOM parse, the ceiling of the JSON reading
// benchmark, as one C function.
#include "simdjson_shim.h"
#include <simdjson.h>

extern "C" size_t simdjson_shim_padding(void) { return simdjson::SIMDJSON_PADDING; }

extern "C" int64_t simdjson_dom_parse_count(const char *data, size_t length) {
    // One parser per thread, reused: simdjson's own benchmarks reuse it, and its first parse
    // allocates the tape and string buffers for the document's capacity.
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root;
    // realloc_if_needed = false: the caller's buffer is already padded, so simdjson parses
    // it in place instead of copying it into a padded one.
    if (parser.parse(data, length, false).get(root) != simdjson::SUCCESS) { return -1; }
    simdjson::dom::object object;
    if (root.get_object().get(object) == simdjson::SUCCESS) { return int64_t(object.size()); }
    simdjson::dom::array array;
    if (root.get_array().get(array) == simdjson::SUCCESS) { return int64_t(array.size()); }
    return 0;
}
