// Anchors the futures library's error types in one translation unit.
#include "futures/errors.hpp"
