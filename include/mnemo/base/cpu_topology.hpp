// How many physical cores this process may run on: the CPUs of its affinity mask
// (sched_getaffinity), grouped into cores by the kernel's topology files
// (/sys/devices/system/cpu/cpuN/topology/{physical_package_id,core_id}). SMT siblings
// share one core's FMA units, so a second thread per core adds little to the matmuls
// and attention and costs synchronisation: llama.cpp counts physical cores for the
// same reason.
//
// Fallbacks, in order: a CPU whose topology files are missing or unreadable counts as
// a core of its own; no affinity mask (not Linux, or the call fails) means
// std::thread::hardware_concurrency() CPUs; never fewer than 1.
#pragma once

#include <algorithm>
#include <cstdio>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

namespace mnemo {

/// The ids of the CPUs the calling thread may run on; empty when unknown.
inline std::vector<int> available_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
#endif
  return cpus;
}

namespace cpu_detail {
/// The first integer in `path`, or -1 when the file is missing or holds none.
inline long read_id(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  long v = -1;
  if (std::fscanf(f, "%ld", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}
}  // namespace cpu_detail

/// Distinct (package, core) pairs among `cpus`, read from `sysfs_cpu_root`
/// ("/sys/devices/system/cpu" on Linux; tests pass a fake tree). A CPU without both
/// ids counts as its own core. 0 for an empty list.
inline int physical_core_count(std::span<const int> cpus,
                               const std::string& sysfs_cpu_root = "/sys/devices/system/cpu") {
  std::set<std::pair<long, long>> cores;
  int unknown = 0;
  for (int c : cpus) {
    const std::string dir = sysfs_cpu_root + "/cpu" + std::to_string(c) + "/topology/";
    const long package = cpu_detail::read_id(dir + "physical_package_id");
    const long core = cpu_detail::read_id(dir + "core_id");
    if (package < 0 || core < 0)
      ++unknown;
    else
      cores.insert({package, core});
  }
  return static_cast<int>(cores.size()) + unknown;
}

/// Physical cores available to this process (see the top of this file); at least 1.
inline int physical_cores_available() {
  const std::vector<int> cpus = available_cpus();
  if (cpus.empty()) return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::max(1, physical_core_count(cpus));
}

}  // namespace mnemo
