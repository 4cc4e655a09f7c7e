// physical_core_count over fake /sys/devices/system/cpu trees: SMT siblings count
// once, cores of different packages with the same core_id count twice, CPUs outside
// the affinity list are ignored, and CPUs without topology files count as cores.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "mnemo/base/cpu_topology.hpp"
#include "mnemo/base/parallel.hpp"

namespace {

namespace fs = std::filesystem;

/// A fake sysfs cpu root under the test's temporary directory.
class fake_sysfs {
 public:
  explicit fake_sysfs(const std::string& name)
      : root_(fs::temp_directory_path() / ("mnemo_cpu_topology_" + name)) {
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~fake_sysfs() { fs::remove_all(root_); }

  /// CPU `cpu` on core `core` of package `package`.
  void cpu(int cpu, long package, long core) {
    const fs::path dir = root_ / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(dir);
    std::ofstream(dir / "physical_package_id") << package << "\n";
    std::ofstream(dir / "core_id") << core << "\n";
  }
  /// A CPU whose topology directory holds garbage.
  void broken_cpu(int cpu) {
    const fs::path dir = root_ / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(dir);
    std::ofstream(dir / "physical_package_id") << "x\n";
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

TEST(CpuTopology, SmtSiblingsCountOnce) {
  fake_sysfs s("smt");
  // 4 cores x 2 threads, Linux's usual numbering: cpu c and c + 4 are siblings.
  for (int c = 0; c < 8; ++c) s.cpu(c, 0, c % 4);
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(mnemo::physical_core_count(all, s.root()), 4);
  const std::vector<int> siblings = {1, 5};
  EXPECT_EQ(mnemo::physical_core_count(siblings, s.root()), 1);
  const std::vector<int> three = {0, 4, 2, 7};
  EXPECT_EQ(mnemo::physical_core_count(three, s.root()), 3);
}

TEST(CpuTopology, SameCoreIdOnTwoPackagesIsTwoCores) {
  fake_sysfs s("packages");
  s.cpu(0, 0, 0);
  s.cpu(1, 1, 0);
  s.cpu(2, 0, 1);
  s.cpu(3, 1, 1);
  const std::vector<int> all = {0, 1, 2, 3};
  EXPECT_EQ(mnemo::physical_core_count(all, s.root()), 4);
}

TEST(CpuTopology, MissingOrBrokenTopologyCountsEachCpu) {
  fake_sysfs s("missing");
  s.cpu(0, 0, 0);
  s.cpu(1, 0, 0);
  s.broken_cpu(2);
  const std::vector<int> cpus = {0, 1, 2, 3};  // cpu3 has no directory at all
  EXPECT_EQ(mnemo::physical_core_count(cpus, s.root()), 3);
  EXPECT_EQ(mnemo::physical_core_count({}, s.root()), 0);
  const std::vector<int> nowhere = {0, 1};
  EXPECT_EQ(mnemo::physical_core_count(nowhere, s.root() + "/no-such-dir"), 2);
}

TEST(CpuTopology, ThisProcessHasAtLeastOneCore) {
  EXPECT_GE(mnemo::physical_cores_available(), 1);
  const std::vector<int> cpus = mnemo::available_cpus();
  if (!cpus.empty()) {
    EXPECT_LE(mnemo::physical_cores_available(), static_cast<int>(cpus.size()));
  }
  EXPECT_GE(mnemo::default_thread_count(), 1);
}

}  // namespace
