// `onnx2ggml import-weights`: a single-file checkpoint's tensors written as a model's weights GGUF.
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "emit/emit.h"
#include "ir/ir.h"
#include "runtime/checkpoint_import.h"

namespace onnx2ggml {

int cmd_import_weights(const std::vector<std::string>& args, const char* usage) {
    std::string model, checkpoint, out;
    ImportOptions o;
    for (size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error("option " + a + " needs a value\n" + usage);
            return args[++i];
        };
        if (a == "-o" || a == "--output") out = next();
        else if (a == "--part") o.part = next();
        else if (a == "--allow-partial") o.allow_partial = true;
        else if (a == "--quiet") o.quiet = true;
        else if (!a.empty() && a[0] == '-') throw Error("unknown option " + a + "\n" + usage);
        else if (model.empty()) model = a;
        else if (checkpoint.empty()) checkpoint = a;
        else throw Error("unexpected argument " + a + "\n" + usage);
    }
    if (model.empty() || checkpoint.empty() || out.empty())
        throw Error(std::string("import-weights needs MODEL.onnx CHECKPOINT.safetensors -o WEIGHTS.gguf\n") + usage);
    auto m = load_model(model);
    import_checkpoint(*m, checkpoint, o);
    write_weights_gguf(*m, out);
    if (!o.quiet) printf("wrote %s\n", out.c_str());
    return 0;
}

}  // namespace onnx2ggml
