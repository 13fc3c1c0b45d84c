// Remote devices through ggml's RPC backend: `--rpc HOST:PORT[,HOST:PORT...]` adds each server's devices (RPC0,
// RPC1, ...) to ggml's registry. ggml aborts the process when a server is down or speaks another protocol, so each
// server is asked for its protocol version here first, and either case is one error line naming HOST:PORT.
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "common/error.h"
#include "ggml-rpc.h"
#include "onnx2ggml/program.h"

#ifndef _WIN32
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fcntl.h>
#endif

namespace o2g {

using onnx2ggml::fail;

#ifndef _WIN32
namespace {

constexpr int kTimeoutMs = 5000;

// A connected TCP socket, closed when it goes out of scope.
struct Socket {
    int fd = -1;
    ~Socket() {
        if (fd >= 0) close(fd);
    }
};

// Waits for fd to become readable or writable; false on timeout.
bool wait_for(int fd, short events) {
    pollfd p = {fd, events, 0};
    return poll(&p, 1, kTimeoutMs) == 1;
}

std::string connect_to(Socket& s, const std::string& host, const std::string& port) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (int e = getaddrinfo(host.c_str(), port.c_str(), &hints, &res)) return gai_strerror(e);
    std::string err = "no address";
    for (addrinfo* a = res; a; a = a->ai_next) {
        s.fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (s.fd < 0) continue;
        // Non-blocking while connecting, so an address that drops packets costs kTimeoutMs, not minutes.
        fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) | O_NONBLOCK);
        int rc = connect(s.fd, a->ai_addr, a->ai_addrlen), so = 0;
        socklen_t len = sizeof(so);
        if (rc != 0 && errno == EINPROGRESS) {
            if (!wait_for(s.fd, POLLOUT)) so = ETIMEDOUT;
            else getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &so, &len);
            rc = so ? -1 : 0;
        } else if (rc != 0) {
            so = errno;
        }
        if (rc == 0) {
            fcntl(s.fd, F_SETFL, fcntl(s.fd, F_GETFL) & ~O_NONBLOCK);
            freeaddrinfo(res);
            return "";
        }
        err = strerror(so);
        close(s.fd);
        s.fd = -1;
    }
    freeaddrinfo(res);
    return err;
}

bool send_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) return false;
        p += k;
        n -= size_t(k);
    }
    return true;
}

// "" when n bytes came; else why not.
std::string recv_all(int fd, uint8_t* p, size_t n) {
    while (n > 0) {
        if (!wait_for(fd, POLLIN)) return "nothing within 5 s: busy with another client, or not an RPC server";
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0) return "it hung up: a server of another protocol version, or not an RPC server";
        p += k;
        n -= size_t(k);
    }
    return "";
}

// ggml's RPC handshake as the protocol defines it: command byte 14 (HELLO), an 8-byte little-endian length and a
// 24-byte capability block (zeros: plain TCP); the reply is a length and major, minor, patch, padding, 24 bytes.
void check_server(const std::string& endpoint) {
    const size_t colon = endpoint.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == endpoint.size())
        fail("--rpc: '", endpoint, "' is not HOST:PORT");
    Socket s;
    const std::string err = connect_to(s, endpoint.substr(0, colon), endpoint.substr(colon + 1));
    if (!err.empty()) fail("RPC server ", endpoint, " unreachable: ", err);
    constexpr size_t kCaps = 24;
    uint8_t hello[1 + 8 + kCaps] = {};
    hello[0] = 14;     // RPC_CMD_HELLO
    hello[1] = kCaps;  // the length's low byte
    if (!send_all(s.fd, hello, sizeof(hello)))
        fail("RPC server ", endpoint, ": the connection closed while greeting it");
    uint8_t len[8], reply[4 + kCaps];
    const std::string why = recv_all(s.fd, len, 8);
    if (!why.empty())
        fail("RPC server ", endpoint, " did not answer the protocol ", RPC_PROTO_MAJOR_VERSION, ".x greeting: ", why);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len[i];
    if (n < 3 || n > sizeof(reply) || !recv_all(s.fd, reply, size_t(n)).empty())
        fail("RPC server ", endpoint, " answered the greeting with ", n, " bytes, not ", sizeof(reply),
             ": an RPC server of another protocol version than ", RPC_PROTO_MAJOR_VERSION, ".",
             RPC_PROTO_MINOR_VERSION);
    if (reply[0] != RPC_PROTO_MAJOR_VERSION || reply[1] > RPC_PROTO_MINOR_VERSION)
        fail("RPC server ", endpoint, " speaks protocol ", int(reply[0]), ".", int(reply[1]), ".", int(reply[2]),
             ", this build ", RPC_PROTO_MAJOR_VERSION, ".", RPC_PROTO_MINOR_VERSION, ".", RPC_PROTO_PATCH_VERSION,
             ": run an rpc server built from the same ggml version");
}

}  // namespace
#endif

void add_rpc_servers(const std::string& list) {
    if (list.empty()) return;
    load_backends();
    static std::mutex mu;
    static std::set<std::string> added;
    std::lock_guard<std::mutex> lock(mu);
    ggml_backend_reg_t rpc = ggml_backend_reg_by_name("RPC");
    using AddServer = ggml_backend_reg_t (*)(const char*);
    auto add = rpc ? (AddServer)ggml_backend_reg_get_proc_address(rpc, "ggml_backend_rpc_add_server") : nullptr;
    if (!add) fail("--rpc: this build's ggml has no RPC client (configure ggml with -DGGML_RPC=ON)");
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        const std::string endpoint = list.substr(start, comma - start);
        start = comma + 1;
        if (endpoint.empty() || added.count(endpoint)) continue;
#ifndef _WIN32
        check_server(endpoint);
#endif
        ggml_backend_reg_t reg = add(endpoint.c_str());
        if (!reg) fail("RPC server ", endpoint, " has no devices");
        ggml_backend_register(reg);
        added.insert(endpoint);
    }
}

bool is_rpc_device(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = dev ? ggml_backend_dev_backend_reg(dev) : nullptr;
    return reg && strncmp(ggml_backend_reg_name(reg), "RPC", 3) == 0;
}

}  // namespace o2g
