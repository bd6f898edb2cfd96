/* compact_bench: `inkray compact-bench` as a program of its own (see CMakeLists.txt). */
#include "app/app.h"

int main(int argc, char **argv) { return app_compact_bench_main(argc, argv); }
