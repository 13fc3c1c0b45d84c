// onnx2ggml-rpc-server: lends this machine's ggml devices to `--rpc HOST:PORT` clients through ggml's RPC backend.
// Its CPU device is ggml's CPU backend at the x86-64 level onnx2ggml picks here, the code a local run uses, so a
// graph computed through it gives the same bits as the same graph run locally (docs/backends.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <strings.h>

#include "common/error.h"
#include "ggml-backend.h"
#include "onnx2ggml/program.h"

namespace {

const char* kUsage =
    "usage: onnx2ggml-rpc-server [--host ADDR] [--port N] [--threads N] [--device NAME[,NAME...]] [--cache DIR]\n"
    "  --host     address to listen on (default 127.0.0.1; 0.0.0.0 for every interface: the protocol has no\n"
    "             authentication, so only on a network you trust)\n"
    "  --port     TCP port (default 50052)\n"
    "  --device   the ggml devices to lend (default: every GPU, else the CPU)\n"
    "  --cache    a folder where weights sent once are kept and reused by later clients\n";

// The named devices, or every GPU, or the CPU.
std::vector<ggml_backend_dev_t> pick_devices(const std::string& names) {
    std::vector<ggml_backend_dev_t> out;
    size_t start = 0;
    while (!names.empty() && start <= names.size()) {
        size_t comma = names.find(',', start);
        if (comma == std::string::npos) comma = names.size();
        const std::string name = names.substr(start, comma - start);
        start = comma + 1;
        ggml_backend_dev_t found = nullptr;
        for (size_t i = 0; i < ggml_backend_dev_count(); i++)
            if (strcasecmp(ggml_backend_dev_name(ggml_backend_dev_get(i)), name.c_str()) == 0)
                found = ggml_backend_dev_get(i);
        if (!found) onnx2ggml::fail("device '", name, "' not found");
        out.push_back(found);
    }
    for (size_t i = 0; names.empty() && i < ggml_backend_dev_count(); i++)
        if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_GPU)
            out.push_back(ggml_backend_dev_get(i));
    if (out.empty()) out.push_back(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU));
    return out;
}

using StartServer = void (*)(const char*, const char*, size_t, size_t, ggml_backend_dev_t*);

int serve(int argc, char** argv) {
    std::string host = "127.0.0.1", port = "50052", devices, cache;
    int threads = int(std::max(1u, std::thread::hardware_concurrency()));
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) onnx2ggml::fail("option ", a, " needs a value\n", kUsage);
            return argv[++i];
        };
        if (a == "--host") host = next();
        else if (a == "--port") port = next();
        else if (a == "--threads" || a == "-t") threads = std::max(1, std::atoi(next().c_str()));
        else if (a == "--device") devices = next();
        else if (a == "--cache") cache = next();
        else if (a == "--help" || a == "-h") { fputs(kUsage, stdout); return 0; }
        else onnx2ggml::fail("unknown option ", a, "\n", kUsage);
    }
    o2g::load_backends();
    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
    auto start = rpc ? (StartServer)ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_start_server") : nullptr;
    if (!start) onnx2ggml::fail("this build's ggml has no RPC backend (configure ggml with -DGGML_RPC=ON)");
    std::vector<ggml_backend_dev_t> devs = pick_devices(devices);
    const std::string endpoint = host + ":" + port;
#ifndef _WIN32
    // A client that hangs up while ggml writes to it would end the server with SIGPIPE; the write fails instead.
    signal(SIGPIPE, SIG_IGN);
#endif
    setvbuf(stdout, nullptr, _IOLBF, 0);  // its start-up lines reach a log file as they are written
    start(endpoint.c_str(), cache.empty() ? nullptr : cache.c_str(), size_t(threads), devs.size(), devs.data());
    // It returns only when it could not listen (its own message says why).
    fprintf(stderr, "onnx2ggml-rpc-server: error: could not serve on %s\n", endpoint.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return serve(argc, argv);
    } catch (const std::exception& e) {
        fprintf(stderr, "onnx2ggml-rpc-server: error: %s\n", e.what());
        return 2;
    }
}
