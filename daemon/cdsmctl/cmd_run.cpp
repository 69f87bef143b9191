// SPDX-License-Identifier: GPL-2.0
// `cdsmctl run -- COMMAND`: fork, have cdsmd track the child while it waits on a pipe, then let
// it exec the command, so that not one page fault of the program escapes tracking. For mpirun it
// also turns on Open MPI's monitoring and, after the run, writes the job's matrix (issue 29).
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "cdsm/error.hpp"
#include "cdsm/job_matrix.hpp"
#include "commands.hpp"
#include "job_matrix.hpp"
#include "output.hpp"

namespace cdsm::cdsmctl {
namespace {

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
    if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

// In the child: wait for the parent's go-ahead, then become the command.
[[noreturn]] void exec_when_tracked(int go_fd, const std::vector<std::string>& command) {
    char go = 0;
    ssize_t n;
    do n = read(go_fd, &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(125);  // the parent could not have it tracked and has reported why
    std::vector<char*> argv;
    for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int err = errno;
    std::fprintf(stderr, "cdsmctl: cannot run '%s': %s\n", argv[0], std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);  // as shells report it
}

int exit_code(int status) {
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

int wait_status(pid_t child) {
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) throw cdsm::Error("waitpid()", std::strerror(errno));
    return exit_code(status);
}

bool is_mpi_launcher(const std::string& command) {
    const std::string name = std::filesystem::path(command).filename().string();
    return name == "mpirun" || name == "mpiexec" || name == "orterun";
}

// The directory Open MPI writes its monitoring files into: the given one (created if need be,
// refused if it holds files, which would mix with this run's) or a new one of the user's.
std::string monitoring_directory(const std::string& given) {
    namespace fs = std::filesystem;
    if (!given.empty()) {
        std::error_code ec;
        fs::create_directories(given, ec);
        if (ec) throw cdsm::Error(given, "cannot be created: " + ec.message());
        if (!fs::is_empty(given, ec))
            throw cdsm::Error(given,
                              "is not empty: this run's monitoring files would mix with "
                              "the files there (give an empty or new directory)");
        return fs::absolute(given).string();
    }
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/cdsm-monitoring.XXXXXX";
    if (!mkdtemp(pattern.data())) throw cdsm::Error(pattern, std::strerror(errno));
    return pattern;
}

// Waits for the child, asking cdsmd every quarter second for its tasks' CPUs: once they exit
// cdsmd no longer says where they ran, and the job's matrix wants each rank's CPU.
int wait_sampling(pid_t child, CdsmdClient& client, const nlohmann::json& app,
                  std::map<std::int64_t, std::uint32_t>& last_cpu) {
    for (;;) {
        int status = 0;
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) return exit_code(status);
        if (done < 0 && errno != EINTR) throw cdsm::Error("waitpid()", std::strerror(errno));
        try {
            const auto reply = client.request({{"cmd", "tasks"}, {"app", app}});
            for (const auto& t : field(reply, "tasks")) {
                const auto tid = optional_int(t, "tid"), cpu = optional_int(t, "cpu");
                if (tid && cpu && *cpu >= 0) last_cpu[*tid] = static_cast<std::uint32_t>(*cpu);
            }
        } catch (const std::exception&) {
            // cdsmd busy or gone: the CPUs stay unknown, the run goes on.
        }
        timespec quarter{0, 250'000'000};
        nanosleep(&quarter, nullptr);
    }
}

// After the run: this node's matrix by rank from cdsmd, with the CPUs seen during the run,
// merged with the monitoring files; written as JSON, summed up on stderr.
void write_job_matrix(CdsmdClient& client, const nlohmann::json& app, const std::string& dir,
                      const std::map<std::int64_t, std::uint32_t>& last_cpu,
                      const std::string& output) {
    std::vector<std::string> missing;
    const auto traffic = read_job_monitoring(dir, false, missing);
    std::vector<cdsm::NodeMatrix> nodes;
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    try {
        nlohmann::json reply = client.request({{"cmd", "matrix"}, {"app", app}, {"view", "whole"}});
        if (reply.contains("tasks") && reply["tasks"].is_array())
            for (auto& t : reply["tasks"]) {
                const auto tid = optional_int(t, "tid");
                if (tid && !optional_int(t, "cpu") && last_cpu.contains(*tid))
                    t["cpu"] = last_cpu.at(*tid);
            }
        cdsm::NodeMatrix node = cdsm::node_matrix_from_json(reply, host, "cdsmd's matrix reply");
        node.topology = cdsm::Topology::from_system();
        nodes.push_back(std::move(node));
    } catch (const std::exception& e) {
        missing.push_back(std::string("this node's shared-memory matrix: ") + e.what());
    }
    cdsm::JobMatrix job = cdsm::merge_job_matrix(traffic ? &*traffic : nullptr, nodes);
    if (!traffic && !missing.empty())
        job.missing.front() = missing.front();
    else
        job.missing.insert(job.missing.end(), missing.begin(), missing.end());
    JobMatrixOptions options;
    options.output = output;
    options.format = "json";
    std::ostringstream ignored;
    print_job_matrix(job, "job matrix of application " + cell(app), options, ignored);
    std::uint64_t total = 0;
    job.primary().for_each_pair([&](std::size_t, std::size_t, std::uint64_t v) { total += v; });
    std::fprintf(stderr, "cdsmctl: job matrix (%zu ranks, %llu %s): %s\n", job.ranks,
                 static_cast<unsigned long long>(total), job.bytes ? "bytes" : "events",
                 output.c_str());
    for (const auto& m : job.missing) std::fprintf(stderr, "cdsmctl: missing: %s\n", m.c_str());
}

}  // namespace

int run_tracked(CdsmdClient& client, const RunOptions& options) {
    if (options.command.empty())
        throw UsageError("run: no COMMAND given (cdsmctl run [--name N] [--] COMMAND [ARG...])");
    const bool monitor = options.mpi_monitor == "on" || (options.mpi_monitor == "auto" &&
                                                         is_mpi_launcher(options.command.front()));
    std::string dir;
    if (monitor) {
        // Through the environment, so that any mpirun command line gets it (Open MPI reads
        // OMPI_MCA_* in every rank).
        dir = monitoring_directory(options.monitoring_dir);
        // A PML list (OMPI_MCA_pml=ob1) must name monitoring too, or Open MPI never loads it.
        if (const char* pml = std::getenv("OMPI_MCA_pml");
            pml && *pml && *pml != '^' && !std::strstr(pml, "monitoring"))
            setenv("OMPI_MCA_pml", (std::string(pml) + ",monitoring").c_str(), 1);
        setenv("OMPI_MCA_pml_monitoring_enable", "2", 1);
        setenv("OMPI_MCA_pml_monitoring_enable_output", "3", 1);
        setenv("OMPI_MCA_pml_monitoring_filename", (dir + "/prof").c_str(), 1);
    } else if (!options.monitoring_dir.empty() || !options.job_matrix.empty()) {
        throw UsageError(
            "run: --monitoring-dir and --job-matrix need monitoring (--mpi-monitor "
            "on, or auto with mpirun)");
    }
    int go[2];
    if (pipe2(go, O_CLOEXEC) != 0) throw cdsm::Error("pipe()", std::strerror(errno));
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) throw cdsm::Error("fork()", std::strerror(errno));
    if (child == 0) {
        close(go[1]);
        exec_when_tracked(go[0], options.command);
    }
    close(go[0]);

    const std::string name =
        options.name.empty() ? std::filesystem::path(options.command.front()).filename().string()
                             : options.name;
    nlohmann::json reply;
    try {
        nlohmann::json request{{"cmd", "track"}, {"pid", child}, {"name", name}};
        if (!options.mode.empty()) request["mode"] = options.mode;
        reply = client.request(request);
    } catch (...) {
        close(go[1]);  // the child exits without running the command
        wait_status(child);
        throw;
    }
    if (options.verbose)
        std::fprintf(stderr, "cdsmctl: %s (pid %d) is application %s\n", name.c_str(), child,
                     cell(field(reply, "app_id")).c_str());

    // A terminal's ^C and ^\ reach the child through its process group; signals sent to
    // cdsmctl alone (kill, a batch system) are passed on.
    g_child = child;
    struct sigaction ignore {
    }, pass{};
    ignore.sa_handler = SIG_IGN;
    pass.sa_handler = forward;
    sigemptyset(&pass.sa_mask);
    pass.sa_flags = SA_RESTART;
    sigaction(SIGINT, &ignore, nullptr);
    sigaction(SIGQUIT, &ignore, nullptr);
    for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) sigaction(sig, &pass, nullptr);

    const char start = 'g';
    if (write(go[1], &start, 1) != 1) {
        const int err = errno;
        close(go[1]);
        wait_status(child);
        throw cdsm::Error("starting the command", std::strerror(err));
    }
    close(go[1]);
    if (!monitor) return wait_status(child);
    std::map<std::int64_t, std::uint32_t> last_cpu;
    const int status = wait_sampling(child, client, field(reply, "app_id"), last_cpu);
    const std::string output =
        options.job_matrix.empty() ? dir + "/job-matrix.json" : options.job_matrix;
    try {
        write_job_matrix(client, field(reply, "app_id"), dir, last_cpu, output);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cdsmctl: no job matrix: %s\n", e.what());
    }
    return status;
}

}  // namespace cdsm::cdsmctl
