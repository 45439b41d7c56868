// FreeError.cpp — tgc_free_error, shared by the runtime's and the compiler's C APIs (both hand
// out malloc'ed messages), defined once so a program may link both libraries.
#include <cstdlib>

extern "C" void tgc_free_error(char *err) { std::free(err); }
