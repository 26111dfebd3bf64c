// <cooperative_groups/memcpy_async.h> on the CPU backend: not emulated (see ../cooperative_groups.h).
#pragma once
#error "cooperative_groups::memcpy_async (<cooperative_groups/memcpy_async.h>) is not supported by rooflab's CPU backend (docs/cpu-mode.md lists the subset)"
