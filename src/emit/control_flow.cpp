// The compile recorder's control flow (see recorder.h): an If or Loop whose condition or trip count follows input
// data or shapes is written as a C++ if or for in the build function. Bodies with constant control stay unrolled.
#include <algorithm>

#include "emit/emit.h"
#include "emit/recorder.h"

namespace onnx2ggml {

namespace {

// Every line of a block, indented one level more.
std::string indent(const std::string& block) {
    std::string r;
    for (size_t p = 0, e; p < block.size(); p = e + 1) {
        e = block.find('\n', p);
        if (e == std::string::npos) e = block.size();
        r += "    " + block.substr(p, e - p) + "\n";
    }
    return r;
}

}  // namespace

std::string ProgramRecorder::scalar_text(const Val& v, bool& constant) {
    auto it = host_.find(v.name);
    HostExpr::Kind k = it != host_.end() ? it->second.kind : unnamed_kind(v);
    constant = k == HostExpr::Const;
    if (constant) return v.host && v.host->numel() ? std::to_string(v.host->i64(0)) : "";
    passed_.insert(v.name);
    if (k == HostExpr::Var) return var_text(it->second) + ".i64(0)";
    if (k == HostExpr::Sym && it->second.e.size() == 1) return it->second.e[0];
    fail_node("'" + v.name + "' decides its control flow and has no C++ form (" +
              (it != host_.end() ? it->second.why : "it depends on input data") + ")");
    return "";
}

std::string ProgramRecorder::branch_cond(const Val& v) {
    bool constant = false;
    std::string e = scalar_text(v, constant);
    if (constant || e.empty()) return "";
    return branch_cond_ = e + " != 0";
}

void ProgramRecorder::branch_end(int k, const std::vector<Val>& outs) {
    Branch& b = branch_[k];
    b.code = nested_code_;
    for (auto& p : pre_) b.code += "    " + p + "\n";  // branch outputs made device constants
    nested_code_.clear();
    pre_.clear();
    b.outs.clear();
    for (const Val& v : outs) {
        auto t = v.t ? tensor_var_.find(v.t) : tensor_var_.end();
        if (t == tensor_var_.end()) fail_node("branch output '" + v.name + "' has no C++ form");
        b.outs.push_back(t == tensor_var_.end() ? "nullptr" : t->second);
    }
}

bool ProgramRecorder::loop_begin(const Val* trip, const Val* cond, std::vector<Val>& carried, Val& counter) {
    bool trip_const = true, cond_const = true;
    std::string t = trip ? scalar_text(*trip, trip_const) : "";
    std::string c = cond ? scalar_text(*cond, cond_const) : "1";
    if (trip_const && cond_const) return false;
    LoopRec& lp = loop_;
    lp = LoopRec{};
    lp.on = true;
    const Node& n = *node_;
    std::string base = n.outputs.empty() || n.outputs[0].empty() ? "loop" : n.outputs[0];
    lp.iter = ident(base + "_iter");
    lp.cond = ident(base + "_cond");
    lp.trip = trip ? ident(base + "_trip") : "";
    for (auto& p : pre_) lp.head += "    " + p + "\n";  // carried values the lowering put on the device
    pre_.clear();
    if (trip) lp.head += "    const int64_t " + lp.trip + " = " + t + ";\n";
    lp.head += "    bool " + lp.cond + " = " + (c.empty() ? "1" : c) + " != 0;\n";
    // The counter is the loop variable; carried values become stand-ins (a view, a copy) that only the body's code
    // names as the loop's variables, so that an outer read of the initial value keeps its own name.
    counter.name = "#" + lp.iter;
    host_[counter.name] = HostExpr{HostExpr::Sym, {lp.iter}, ""};
    for (size_t i = 0; i < carried.size(); i++) {
        Val& v = carried[i];
        std::string var = ident(i < n.outputs.size() && !n.outputs[i].empty() ? n.outputs[i] : base + "_carried");
        lp.carried.push_back(var);
        lp.carried_host.push_back(!v.t);
        if (v.t) {
            auto init = tensor_var_.find(v.t);
            auto named = val_var.find(v.name);
            std::string e = init != tensor_var_.end() ? init->second : named != val_var.end() ? named->second : "";
            if (e.empty()) fail_node("loop-carried '" + v.name + "' has no C++ form");
            lp.head += "    ggml_tensor* " + var + " = " + (e.empty() ? "nullptr" : e) + ";\n";
            v.t = ggml_view_tensor(b_.ctx, v.t);
            tensor_var_[v.t] = var;
        } else if (v.host) {
            std::string init = host_text(HostArg{v.host.get(), &v});
            lp.head += "    o2g::HostTensor " + var + " = " + init + ";\n";
            v.host = std::make_shared<HostTensor>(*v.host);  // same data, its own identity
            host_by_ptr_[v.host.get()] = HostExpr{HostExpr::Var, {var}, ""};
        }
        v.name.clear();
    }
    nested_code_.clear();
    return true;
}

void ProgramRecorder::loop_end(const Val& cond_out, const std::vector<Val>& carried_out, const std::vector<Val>& scans) {
    LoopRec& lp = loop_;
    std::string body = nested_code_;
    for (auto& p : pre_) body += "    " + p + "\n";
    nested_code_.clear();
    pre_.clear();
    // A body value as a tensor or host expression; the kind must match the loop variable's.
    auto text = [&](const Val& v, bool host) -> std::string {
        if (!host) {
            auto t = v.t ? tensor_var_.find(v.t) : tensor_var_.end();
            if (t != tensor_var_.end()) return t->second;
        } else if (v.host) {
            auto p = host_by_ptr_.find(v.host.get());
            if (p != host_by_ptr_.end() && p->second.kind == HostExpr::Var) return var_text(p->second);
            return host_text(HostArg{v.host.get(), &v});
        }
        fail_node("loop body output '" + v.name + "' is " + (host ? "a device tensor" : "on the host") +
                  " where its loop variable is " + (host ? "on the host" : "a device tensor"));
        return "";
    };
    const Node& n = *node_;
    for (size_t k = 0; k < scans.size(); k++) {
        bool host = !scans[k].t;
        size_t o = lp.carried.size() + k;
        std::string var = ident(o < n.outputs.size() && !n.outputs[o].empty() ? n.outputs[o] : "scan");
        std::string items = ident(var + "_items");
        lp.scans.push_back(var);
        lp.scan_host.push_back(host);
        lp.head += std::string("    std::vector<") + (host ? "o2g::HostTensor" : "ggml_tensor*") + "> " + items + ";\n";
        body += "    " + items + ".push_back(" + text(scans[k], host) + ");\n";
        if (host) {
            lp.tail += "    o2g::HostTensor " + var + " = o2g::host_stack(" + items + ");\n";
        } else {
            lp.tail += "    ggml_tensor* " + var + " = o2g::stack(ctx, " + items + ", {.rank = " +
                       std::to_string(scans[k].rank()) + "});\n";
        }
    }
    // Scan items first, then the loop variables, all at once (the body may swap them).
    size_t nc = std::min(carried_out.size(), lp.carried.size());
    for (size_t i = 0; i < nc; i++) {
        std::string e = text(carried_out[i], lp.carried_host[i]);
        if (nc == 1) body += "    " + lp.carried[i] + " = " + e + ";\n";
        else body += std::string("    ") + (lp.carried_host[i] ? "o2g::HostTensor " : "ggml_tensor* ") + lp.carried[i] +
                     "_next = " + e + ";\n";
    }
    for (size_t i = 0; i < nc && nc > 1; i++) body += "    " + lp.carried[i] + " = " + lp.carried[i] + "_next;\n";
    bool constant = false;
    std::string c = scalar_text(cond_out, constant);
    if (!constant || c != "1") body += "    " + lp.cond + " = " + (c.empty() ? "0" : c) + " != 0;\n";
    lp.body = body;
}

// An If or Loop the program decides: its code, and the variables that hold its outputs.
std::string ProgramRecorder::control_code(const Node& n, std::vector<std::string>& out_vars) {
    std::string code;
    if (!branch_cond_.empty()) {  // outputs declared, assigned in either branch
        for (size_t o = 0; o < out_vars.size(); o++)
            if (!out_vars[o].empty()) {
                out_vars[o] = ident(n.outputs[o]);
                code += "    ggml_tensor* " + out_vars[o] + " = nullptr;\n";
            }
        for (int k : {1, 0}) {
            code += k ? "    if (" + branch_cond_ + ") {\n" : "    } else {\n";
            code += indent(branch_[k].code);
            for (size_t o = 0; o < out_vars.size() && o < branch_[k].outs.size(); o++)
                if (!out_vars[o].empty()) code += "        " + out_vars[o] + " = " + branch_[k].outs[o] + ";\n";
        }
        return code + "    }\n";
    }
    const LoopRec& lp = loop_;
    code = lp.head;
    code += "    for (int64_t " + lp.iter + " = 0; " + (lp.trip.empty() ? "" : lp.iter + " < " + lp.trip + " && ") +
            lp.cond + "; " + lp.iter + "++) {\n";
    code += "        if (" + lp.iter + " >= 4096) throw o2g::OpError(\"Loop: more than 4096 iterations\");\n";
    code += indent(lp.body) + "    }\n" + lp.tail;
    std::vector<std::string> vars = lp.carried;
    std::vector<bool> host = lp.carried_host;
    vars.insert(vars.end(), lp.scans.begin(), lp.scans.end());
    host.insert(host.end(), lp.scan_host.begin(), lp.scan_host.end());
    for (size_t o = 0; o < out_vars.size(); o++) {
        out_vars[o].clear();
        if (o >= vars.size() || n.outputs[o].empty()) continue;
        if (host[o]) host_[n.outputs[o]] = HostExpr{HostExpr::Var, {vars[o]}, ""};
        else out_vars[o] = vars[o];
    }
    return code;
}

}  // namespace onnx2ggml
