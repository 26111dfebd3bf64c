// <cooperative_groups/scan.h> on the CPU backend: not emulated (see ../cooperative_groups.h).
#pragma once
#error "cooperative_groups scans (<cooperative_groups/scan.h>: inclusive_scan, exclusive_scan) are not supported by rooflab's CPU backend (docs/cpu-mode.md lists the subset)"
