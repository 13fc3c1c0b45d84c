// Replays the committed fuzzer findings (tests/fuzz/regressions/HARNESS/*) through a harness without
// libFuzzer, in the ordinary test build: each input must be handled (parsed or refused with an Error) with no
// crash and no escaping std::bad_alloc. Inputs named in regressions/KNOWN are open findings owned elsewhere:
// reported, not failed, and flagged when they start passing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// The session harness's custom mutator calls this; replays never mutate.
extern "C" size_t LLVMFuzzerMutate(uint8_t*, size_t size, size_t) { return size; }

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: replay DIR [KNOWN]\n");
        return 2;
    }
    std::set<std::string> known;
    if (argc > 2) {
        std::ifstream k(argv[2]);
        for (std::string line; std::getline(k, line);)
            if (!line.empty() && line[0] != '#') known.insert(line.substr(0, line.find(' ')));
    }
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(argv[1]))  // git keeps no empty folder: none yet for this harness
        for (const auto& e : std::filesystem::directory_iterator(argv[1]))
            if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    int failed = 0;
    for (const auto& p : files) {
        std::ifstream f(p, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        int before = fuzz::bad_allocs;
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
        bool bad = fuzz::bad_allocs != before;
        bool is_known = known.count(p.filename().string()) > 0;
        const char* verdict = bad ? (is_known ? "known open finding (std::bad_alloc)" : "FAILED: std::bad_alloc escaped")
                                  : (is_known ? "ok; listed in KNOWN but fixed now: remove it there" : "ok");
        printf("%s: %s\n", p.filename().c_str(), verdict);
        failed += bad && !is_known;
    }
    printf("replayed %zu inputs from %s, %d failed\n", files.size(), argv[1], failed);
    return failed ? 1 : 0;
}
