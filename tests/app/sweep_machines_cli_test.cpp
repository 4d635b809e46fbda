// End-to-end checks of a sweep on several machines: `stepsim sweep --mpi` under Open MPI's mpirun
// writes the bytes of `sweep -j` on one machine (without MPI in the build, one clear error), and
// the Slurm array script of docs/ gives, once merged, the rows of one sweep.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_util.hpp"

namespace {

const std::string kSweep = std::string(STEPSIM_SOURCE_DIR) + "/tests/golden/sweep-small.json";

}  // namespace

TEST_CASE("stepsim sweep --mpi: --shard or -j with it exit 2 naming both options") {
  const auto shard = cli::run("sweep " + kSweep + " --mpi --shard 0/2 --out " + cli::tmpdir() + "/mpi-shard");
  CHECK(shard.status == 2);
  CHECK(shard.err == "stepsim: error: --shard: cannot be combined with --mpi\n");
  const auto jobs = cli::run("sweep " + kSweep + " --mpi -j 4 --out " + cli::tmpdir() + "/mpi-jobs");
  CHECK(jobs.status == 2);
  CHECK(jobs.err == "stepsim: error: --jobs: cannot be combined with --mpi\n");
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/mpi-shard"));
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/mpi-jobs"));
}

#ifndef STEPSIM_MPIEXEC

TEST_CASE("stepsim sweep --mpi: a build without MPI says so and exits 2") {
  const auto r = cli::run("sweep " + kSweep + " --mpi -q --out " + cli::tmpdir() + "/mpi-none");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("stepsim: error: --mpi: this stepsim was built without MPI", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(cli::tmpdir() + "/mpi-none"));
}

#endif

TEST_CASE("stepsim sweep --mpi under mpirun --oversubscribe -n 3: the bytes of sweep -j 3" * doctest::timeout(600)) {
#ifndef STEPSIM_MPIEXEC
  std::cout << "skipped: stepsim built without MPI\n";
  MESSAGE("skipped: stepsim built without MPI");
#else
  // Open MPI's own components leak at MPI_Finalize (LeakSanitizer reports them from libmpi and
  // from dlopened modules it has closed), so the sanitizer build checks the ranks for errors but
  // not for leaks; stepsim's worker code is leak-checked by the -j tests.
#if defined(STEPSIM_SANITIZED)
  const std::string sanitizer_env = "ASAN_OPTIONS=detect_leaks=0 ";
#else
  const std::string sanitizer_env;
#endif
  // Open MPI refuses root unless told; single-copy between ranks needs ptrace rights that
  // containers often lack.
  const std::string mpirun = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                                         "OMPI_MCA_btl_vader_single_copy_mechanism=none ") +
                             sanitizer_env + STEPSIM_MPIEXEC + " --oversubscribe -n 3 ";
  const auto local = cli::empty_dir("mpi-local");
  const auto ranks = cli::empty_dir("mpi-ranks");
  const auto j3 = cli::run("sweep " + kSweep + " -j 3 -q --refine 2 --out " + local);
  REQUIRE(j3.status == 0);
  const auto mpi = cli::run("sweep " + kSweep + " --mpi -q --refine 2 --out " + ranks, mpirun);
  INFO(mpi.err);
  REQUIRE(mpi.status == 0);
  CHECK(mpi.out == j3.out);  // the ranking, printed by rank 0 only
  CHECK(cli::files_starting(ranks, "") == cli::files_starting(local, ""));
  for (const auto& f : cli::files_starting(local, "")) CHECK(cli::slurp(ranks + "/" + f) == cli::slurp(local + "/" + f));
  const auto rows = cli::slurp(ranks + "/results.jsonl");
  CHECK(rows.find("\"engine\":\"simgrid\"") != std::string::npos);  // the refined rows came from the worker ranks

  // A bad sweep file: rank 0 stops the others and the job exits with status 2.
  const auto bad = cli::write_file("mpi-bad-sweep.json", R"({"base": {"model": "llama-2-7b"}, "axes": {"parallel.pp": [1, "two"]}})");
  const auto r = cli::run("sweep " + bad + " --mpi -q --out " + cli::tmpdir() + "/mpi-bad", mpirun);
  CHECK(r.status == 2);
  CHECK(r.err.find("stepsim: error: axes.parallel.pp") != std::string::npos);
#endif
}

TEST_CASE("docs/sweep-slurm-array.sh: three array tasks and stepsim merge give the rows of one sweep") {
  const auto whole = cli::empty_dir("array-whole");
  REQUIRE(cli::run("sweep " + kSweep + " -j 2 -q --out " + whole).status == 0);
  const auto out = cli::empty_dir("array-out");
  const std::string script = std::string(STEPSIM_SOURCE_DIR) + "/docs/sweep-slurm-array.sh";
  const std::string stepsim = std::string(STEPSIM_BINARY_DIR) + "/app/stepsim";
  // Array tasks 1..3 (--array=1-3) as Slurm starts them; the second run of task 2 resumes its shard.
  for (const int task : {1, 2, 3, 2}) {
    const std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(task) + " SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_COUNT=3 " +
                            "SLURM_CPUS_PER_TASK=1 STEPSIM=" + stepsim + " bash " + script + " " + kSweep + " " + out + " >/dev/null 2>&1";
    CHECK(std::system(cmd.c_str()) == 0);
  }
  CHECK(cli::files_starting(out, "") == std::vector<std::string>{"shard-0", "shard-1", "shard-2"});
  const auto merged = cli::run("merge " + out + "/shard-0 " + out + "/shard-1 " + out + "/shard-2 --out " + out + "/results.jsonl");
  CHECK(merged.status == 0);
  CHECK(cli::slurp(out + "/results.jsonl") == cli::slurp(whole + "/results.jsonl"));
}
