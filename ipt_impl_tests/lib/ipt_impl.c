/* The one translation unit that holds ipt.h's implementation for the unit
 * tests; each test links it. */
#define IPT_IMPLEMENTATION
#include "ipt.h"
