// `detdb-bench figure NAME --out DIR`: one figure or table of the DCLP
// paper's section 4 (seed 002) by one command. NAME: fig2 ... fig10, table2,
// or all (elision: seed 001's latch benchmark, bench/figure_elision.cc;
// staged: seed 003's, bench/staged_figure.cc; lil: seed 000's Fig. 4,
// bench/intent_command.cc).
// Each runs its sweep over the paper's four lock managers with the paper's
// setup (4 workers and 1 lock thread per partition; 8 machines for
// figs 7, 8 and 10 (TPC-C, 96 warehouses), 2-8 for fig 9), prints the
// table, and writes DIR/NAME.csv and DIR/NAME.png (bench/plot_figure.py,
// python3-matplotlib).
//
// Where this host has the cores for the setup it runs real threads (an
// in-process detdb, bench/micro_runner.h); where not, the simulation
// (bench/sim.h) with the costs of --calibration. The output says which.
// --real runs the setup with real threads whatever the host and prints the
// simulation's prediction beside each real figure; a setup of several
// machines then runs a real cluster: one `detdb` process per node on
// 127.0.0.1 (deploy/test_cluster.h, as `detdb-bench crash` does), loaded
// and driven over ZeroMQ by the network clients (bench/micro_cluster.h,
// bench/tpcc_runner.h). --figure_points picks some of a figure's x values.
// Compiled into detdb-bench (flags belong to binaries).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "bench/micro_cluster.h"
#include "bench/sim_command.h"
#include "bench/tpcc_runner.h"
#include "deploy/test_cluster.h"
#include "gflags/gflags.h"

DECLARE_string(calibration);
DECLARE_string(out);
DECLARE_uint32(workers);
DECLARE_double(duration);
DECLARE_double(sim_duration);
DECLARE_uint32(outstanding);
DECLARE_uint64(epoch_us);
DEFINE_bool(real, false, "figure: run the setup with real threads on this host, the simulation's prediction beside");
DEFINE_string(figure_lock_managers, "dclp,vll_sca,vll,det2pl", "figure: the lock managers (the paper's four)");
DEFINE_string(figure_points, "", "figure: run only these x values of the figure (comma list, e.g. 2,4 for fig9)");

namespace detdb {
namespace {

struct Point {
  MicroOptions w;
  uint32_t nodes = 1;
  SimTpccOptions tpcc;  // tpcc.warehouses > 0: TPC-C New-Order + Payment instead of w's txns
};

// A figure's lines beyond one per lock manager: each variant changes the
// setup of every point (Fig. 9: 10% and 20% multi-partition txns), and its
// lines are named "LOCK_MANAGER LABEL".
struct Variant {
  std::string label;
  std::function<void(Point*)> apply;
};

struct Figure {
  std::string name, title, xlabel;
  bool logx = false;
  std::vector<double> xs;
  std::function<Point(double)> setup;
  std::vector<Variant> variants = {{"", nullptr}};
};

Point Base() {
  Point p;
  p.w.records_per_partition = 1000000;
  return p;
}

std::vector<Figure> Figures() {
  const std::vector<double> contention = {0.0001, 0.001, 0.01, 0.1};
  const std::vector<double> mp = {0, 0.05, 0.1, 0.2, 0.5, 1.0};
  auto vs_contention = [&](std::string name, std::string title, double compute_us, double write_fraction) {
    return Figure{name, title, "contention index", true, contention, [=](double x) {
                    Point p = Base();
                    p.w.contention = x;
                    p.w.compute_us = compute_us;
                    p.w.write_fraction = write_fraction;
                    return p;
                  }};
  };
  auto multipartition = [&](std::string name, std::string title, double ci) {
    return Figure{name, title, "multi-partition share", false, mp, [=](double x) {
                    Point p = Base();
                    p.nodes = 8;
                    p.w.partitions = 8;
                    p.w.contention = ci;
                    p.w.multipartition = x;
                    return p;
                  }};
  };
  return {
      vs_contention("fig2", "Fig. 2: short microbenchmark vs contention", 0, 1),
      vs_contention("fig3", "Fig. 3: long microbenchmark (5 us per read) vs contention", 5, 1),
      vs_contention("fig4", "Fig. 4: read-only short microbenchmark vs contention", 0, 0),
      vs_contention("fig5", "Fig. 5: 5% writes, 95% reads vs contention", 0, 0.05),
      Figure{"fig6", "Fig. 6: high contention (0.1), varying the write share", "write share", false,
             {0, 0.05, 0.1, 0.2, 0.5, 1.0},
             [](double x) {
               Point p = Base();
               p.w.contention = 0.1;
               p.w.write_fraction = x;
               return p;
             }},
      Figure{"table2", "Table 2: dependency depth (one hot record, written every depth+1 txns)", "depth", true,
             {9, 19, 99},
             [](double x) {
               Point p = Base();
               p.w.depth = static_cast<uint32_t>(x);
               return p;
             }},
      multipartition("fig7", "Fig. 7: 8 machines, high contention (0.1), varying multi-partition txns", 0.1),
      multipartition("fig8", "Fig. 8: 8 machines, low contention (0.0001), varying multi-partition txns", 0.0001),
      Figure{"fig9", "Fig. 9: scalability, low contention, 10% and 20% multi-partition", "machines", false,
             {2, 4, 6, 8},
             [](double x) {
               Point p = Base();
               p.nodes = static_cast<uint32_t>(x);
               p.w.partitions = p.nodes;
               p.w.contention = 0.0001;
               return p;
             },
             {{"10%", [](Point* p) { p->w.multipartition = 0.1; }},
              {"20%", [](Point* p) { p->w.multipartition = 0.2; }}}},
      // 96 warehouses on 8 machines (12 each), New-Order + Payment; x: the
      // share of New-Orders that order from another warehouse.
      Figure{"fig10", "Fig. 10: TPC-C (96 warehouses, 8 machines), varying remote New-Orders",
             "remote New-Order share", false, mp,
             [](double x) {
               Point p = Base();
               p.nodes = 8;
               p.w.partitions = 8;
               p.tpcc.warehouses = 96;
               p.tpcc.remote_order = x;
               return p;
             }},
  };
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = s.find(',', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  out.push_back(s.substr(b));
  return out;
}

// The directory the binary was built in's source tree: build/<preset>/bench/detdb-bench.
std::string PlotScript() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    std::string exe(buf, n);
    for (int up = 0; up < 4; ++up) exe = exe.substr(0, exe.rfind('/'));
    std::string path = exe + "/bench/plot_figure.py";
    if (std::ifstream(path)) return path;
  }
  return "bench/plot_figure.py";
}

// A setup of several machines with real threads: a cluster of p.nodes
// `detdb` processes on this host (p.w.partitions / p.nodes partitions
// each), loaded with the point's data, driven for --duration by the
// network client, then stopped. Returns committed txns per second.
absl::StatusOr<double> RunRealCluster(const Point& p, const std::string& lm, uint32_t workers) {
  if (p.nodes == 0 || p.w.partitions % p.nodes != 0)
    return absl::InvalidArgumentError(absl::StrCat(p.w.partitions, " partitions do not split over ", p.nodes, " nodes"));
  TestClusterOptions o;
  o.nodes = p.nodes;
  o.partitions_per_node = p.w.partitions / p.nodes;
  if (FLAGS_epoch_us > 0) o.epoch_us = FLAGS_epoch_us;
  o.flags = {"--lock_manager=" + lm, absl::StrCat("--workers=", workers)};
  if (p.tpcc.warehouses > 0) {
    o.flags.push_back("--workload=tpcc");
    o.flags.push_back(absl::StrCat("--warehouses=", p.tpcc.warehouses));
  } else {
    o.flags.push_back("--workload=micro");
    o.flags.push_back(absl::StrCat("--micro_records=", p.w.records_per_partition));
  }
  TestCluster cluster(o);
  if (absl::Status s = cluster.Start(std::chrono::seconds(300)); !s.ok())
    return absl::UnavailableError(absl::StrCat("the cluster of ", p.nodes, " nodes did not start: ", s.message(), "\n",
                                               cluster.Logs()));
  double tps = 0;
  if (p.tpcc.warehouses > 0) {
    tpcc::TpccRunOptions ro;
    ro.cluster = cluster.config();
    ro.mix.percent = {100 * (1 - p.tpcc.payment_share), 100 * p.tpcc.payment_share, 0, 0, 0};
    ro.remote_line = 1 - std::pow(1 - p.tpcc.remote_order, 0.1);  // as the simulation draws it
    ro.remote_payment = p.tpcc.remote_payment;
    ro.duration_s = FLAGS_duration;
    ro.check = false;
    auto r = tpcc::RunTpcc(ro);
    if (!r.ok()) return r.status();
    tps = r->txns_per_sec;
  } else {
    MicroClusterOptions mo;
    mo.config = cluster.config();
    mo.workload = p.w;
    mo.outstanding = FLAGS_outstanding;
    mo.duration_s = FLAGS_duration;
    auto r = RunMicroCluster(mo);
    if (!r.ok()) return r.status();
    if (r->lock_manager != lm)
      return absl::InternalError(absl::StrCat("the nodes run ", r->lock_manager, ", not ", lm));
    tps = r->txns_per_sec;
  }
  if (absl::Status s = cluster.Stop(); !s.ok()) return s;
  return tps;
}

// One lock manager at one point: (the figure's value, the simulation's
// prediction). Real threads when `real`, else the simulation's value.
absl::StatusOr<std::pair<double, double>> RunCell(const Point& p, const std::string& lm, const SimCosts* costs,
                                                  uint32_t workers, bool real) {
  double value = 0, sim_value = 0;
  if (costs != nullptr) {
    SimOptions so = SimFromFlags();
    so.workload = p.w;
    so.nodes = p.nodes;
    so.workers = workers;
    so.lock_manager = lm;
    so.tpcc = p.tpcc;
    so.duration_s = FLAGS_sim_duration;
    // The paper's setup: its clients and sequencer had cores to spare. Beside
    // a real run on this host (--real), the prediction charges them as the
    // real run pays them.
    so.model_front = real;
    auto r = RunSim(so, *costs);
    if (!r.ok()) return r.status();
    sim_value = value = r->txns_per_sec;
  }
  if (real && p.nodes > 1) {
    auto r = RunRealCluster(p, lm, workers);
    if (!r.ok()) return r.status();
    value = *r;
  } else if (real && p.tpcc.warehouses > 0) {
    tpcc::TpccRunOptions ro;
    ro.scale = tpcc::Scale::Spec(p.tpcc.warehouses);
    ro.mix.percent = {100 * (1 - p.tpcc.payment_share), 100 * p.tpcc.payment_share, 0, 0, 0};
    ro.remote_line = 1 - std::pow(1 - p.tpcc.remote_order, 0.1);  // as the simulation draws it
    ro.remote_payment = p.tpcc.remote_payment;
    ro.partitions = p.w.partitions;
    ro.workers = workers;
    ro.lock_manager = lm;
    ro.duration_s = FLAGS_duration;
    ro.check = false;
    auto r = tpcc::RunTpcc(ro);
    if (!r.ok()) return r.status();
    value = r->txns_per_sec;
  } else if (real) {
    MicroRunOptions ro = RealFromFlags();
    ro.workload = p.w;
    ro.workers = workers;
    ro.lock_manager = lm;
    auto r = RunMicro(ro);
    if (!r.ok()) return r.status();
    value = r->txns_per_sec;
  }
  return std::make_pair(value, sim_value);
}

int RunFigure(const Figure& f, const SimCosts* costs, const std::vector<std::string>& lms, uint32_t workers) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string csv_path = FLAGS_out + "/" + f.name + ".csv";
  std::ofstream csv(csv_path);
  if (!csv) {
    fprintf(stderr, "detdb-bench figure: cannot write %s\n", csv_path.c_str());
    return 1;
  }
  csv << "figure,x,series,txns_per_sec,mode" << (FLAGS_real ? ",sim_txns_per_sec" : "") << "\n";
  printf("\n%s\n%-10s", f.title.c_str(), f.xlabel.substr(0, 10).c_str());
  auto series_name = [](const std::string& lm, const Variant& v) {
    return v.label.empty() ? lm : lm + " " + v.label;
  };
  for (const Variant& v : f.variants)
    for (const std::string& lm : lms) printf(" %14s", series_name(lm, v).c_str());
  if (lms.size() > 1) printf("   %s/others", lms[0].c_str());
  printf("\n");
  std::string modes;
  std::vector<double> xs = f.xs;
  if (!FLAGS_figure_points.empty()) {
    xs.clear();
    for (const std::string& v : Split(FLAGS_figure_points)) {
      const double x = std::atof(v.c_str());
      if (std::find(f.xs.begin(), f.xs.end(), x) == f.xs.end()) {
        fprintf(stderr, "detdb-bench figure: %s has no point %s\n", f.name.c_str(), v.c_str());
        return 2;
      }
      xs.push_back(x);
    }
  }
  for (double x : xs) {
    printf("%-10g", x);
    std::vector<double> ratios;
    std::string mode;
    for (const Variant& v : f.variants) {
      Point p = f.setup(x);
      if (v.apply) v.apply(&p);
      // Threads the setup needs: per partition a lock thread and the
      // workers, per node a sequencer; the client runs beside them.
      const uint64_t threads = uint64_t{p.w.partitions} * (1 + workers) + p.nodes + 1;
      const bool real = FLAGS_real || (threads <= cores && p.nodes == 1);
      mode = !real ? "simulated" : p.nodes > 1 ? absl::StrCat("real cluster of ", p.nodes) : "real";
      if (modes.find(mode) == std::string::npos) modes += (modes.empty() ? "" : "+") + mode;
      std::vector<double> tps;
      for (const std::string& lm : lms) {
        auto cell = RunCell(p, lm, costs, workers, real);
        if (!cell.ok()) {
          fprintf(stderr, "detdb-bench figure: %s\n", std::string(cell.status().message()).c_str());
          return 1;
        }
        const auto [value, sim_value] = *cell;
        tps.push_back(value);
        if (FLAGS_real && costs != nullptr) {
          printf(" %7.0f(s%6.0f)", value, sim_value);
        } else {
          printf(" %14.0f", value);
        }
        csv << f.name << "," << x << "," << series_name(lm, v) << "," << value << "," << mode;
        if (FLAGS_real) csv << "," << (costs != nullptr ? absl::StrCat(sim_value) : "");
        csv << "\n";
        fflush(stdout);
      }
      for (size_t i = 1; i < tps.size(); ++i) ratios.push_back(tps[i] > 0 ? tps[0] / tps[i] : 0);
    }
    if (!ratios.empty()) {
      printf("  ");
      for (double r : ratios) printf(" %.2f", r);
    }
    printf("   [%s]\n", mode.c_str());
  }
  csv.close();
  printf("(%s; %u worker(s) + 1 lock thread per partition; this host: %u cores%s)\n", modes.c_str(), workers, cores,
         FLAGS_real && costs != nullptr ? "; real (s: the simulation's prediction)" : "");
  return PlotFigure(csv_path, FLAGS_out + "/" + f.name + ".png", f.title, f.xlabel, f.logx);
}

}  // namespace

int PlotFigure(const std::string& csv_path, const std::string& png_path, const std::string& title,
               const std::string& xlabel, bool logx) {
  // Debian's python3-matplotlib is for Debian's python3 (a python3 earlier
  // on PATH, e.g. pyenv's, may lack it).
  const std::string python = std::ifstream("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string cmd = absl::StrCat(python, " '", PlotScript(), "' '", csv_path, "' '", png_path, "' '", title,
                                       "' '", xlabel, "'", logx ? " logx" : "");
  if (std::system(cmd.c_str()) != 0) {
    fprintf(stderr, "detdb-bench figure: plotting failed (%s); the CSV is %s. Is python3-matplotlib installed?\n",
            cmd.c_str(), csv_path.c_str());
    return 1;
  }
  printf("wrote %s and %s\n", csv_path.c_str(), png_path.c_str());
  return 0;
}

int FigureCommand(const std::string& name) {
  if (FLAGS_out.empty()) {
    fprintf(stderr, "detdb-bench figure NAME: give --out=DIR\n");
    return 2;
  }
  if (name == "lil") return IntentLockFigure(PlotScript());  // seed 000's Fig. 4 (bench/intent_command.cc)
  std::filesystem::create_directories(FLAGS_out);
  if (name == "elision") return ElisionFigure(FLAGS_out);
  if (name == "staged") return StagedFigure();  // seed 003: bench/staged_figure.cc
  std::vector<Figure> chosen;
  for (const Figure& f : Figures())
    if (name == "all" || f.name == name) chosen.push_back(f);
  if (chosen.empty()) {
    fprintf(stderr, "detdb-bench figure: unknown figure %s (fig2 ... fig10, table2, all; elision, staged, lil)\n", name.c_str());
    return 2;
  }
  const std::vector<std::string> lms = Split(FLAGS_figure_lock_managers);
  const uint32_t workers = gflags::GetCommandLineFlagInfoOrDie("workers").is_default ? 4 : FLAGS_workers;
  auto costs = SimCosts::Load(FLAGS_calibration);
  if (!costs.ok() && !FLAGS_real) {
    fprintf(stderr, "detdb-bench figure: %s\n", std::string(costs.status().message()).c_str());
    return 1;
  }
  for (const Figure& f : chosen) {
    const int rc = RunFigure(f, costs.ok() ? &*costs : nullptr, lms, workers);
    if (rc != 0) return rc;
  }
  return 0;
}

}  // namespace detdb
