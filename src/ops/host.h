// Host-side helpers for shape, integer and boolean work evaluated at build time.
#pragma once

#include "lib/host_util.h"
#include "ops/op.h"

