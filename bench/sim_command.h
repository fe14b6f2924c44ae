// The simulation's subcommands of detdb-bench (bench/sim_command.cc) and the
// option structs they build from its flags (for the figure command, and the
// micro command in detdb_bench_main.cc).
// Thread-safety: called from main's thread only.
#ifndef DETDB_BENCH_SIM_COMMAND_H_
#define DETDB_BENCH_SIM_COMMAND_H_

#include <string>

#include "bench/micro_runner.h"
#include "bench/sim.h"

namespace detdb {

int CalibrateCommand();
int SimulateCommand();
// bench/figure_command.cc: `detdb-bench figure NAME`.
int FigureCommand(const std::string& name);
// bench/figure_command.cc: draws a figure's CSV into a PNG with
// bench/plot_figure.py (python3-matplotlib); 0 on success, else says why.
int PlotFigure(const std::string& csv_path, const std::string& png_path, const std::string& title,
               const std::string& xlabel, bool logx);
// bench/figure_elision.cc: `detdb-bench figure elision` (seed 001's latch
// benchmark) into out_dir/elision.csv and .png.
int ElisionFigure(const std::string& out_dir);
// `detdb-bench figure staged --out DIR` (seed 003): bench/staged_figure.cc.
int StagedFigure();
// bench/intent_command.cc: `detdb-bench lil`, and `detdb-bench figure lil`
// (plot_script: bench/plot_figure.py).
int IntentLockCommand();
int IntentLockFigure(const std::string& plot_script);
// bench/admission_command.cc: `detdb-bench admission-replay FILE`.
int AdmissionReplayCommand(const std::string& path);
// The microbenchmark, simulation and real-run options the flags give.
MicroOptions MicroFromFlags();
SimOptions SimFromFlags();
MicroRunOptions RealFromFlags();

}  // namespace detdb

#endif  // DETDB_BENCH_SIM_COMMAND_H_
