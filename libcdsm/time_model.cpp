// SPDX-License-Identifier: GPL-2.0
#include "cdsm/time_model.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cdsm/error.hpp"

namespace cdsm {
namespace {

constexpr std::string_view kSchema = "cdsm-time-model/1";

double number(const nlohmann::json& object, const char* key, double fallback,
              const std::string& where) {
    if (!object.contains(key)) return fallback;
    const auto& value = object.at(key);
    if (!value.is_number()) throw Error(where, std::string("'") + key + "' must be a number");
    return value.get<double>();
}

LinkTiming link(const nlohmann::json& json, const char* key, LinkTiming fallback,
                std::string_view name) {
    if (!json.contains(key)) return fallback;
    const auto& object = json.at(key);
    const std::string where = std::string(name) + ": " + key;
    if (!object.is_object())
        throw Error(where, "must be an object {\"latency_us\": ..., \"rate_gbs\": ...}");
    return {number(object, "latency_us", fallback.latency_us, where),
            number(object, "rate_gbs", fallback.rate_gbs, where)};
}

std::uint32_t whole(const nlohmann::json& json, const char* key, std::uint32_t fallback,
                    std::string_view name) {
    if (!json.contains(key)) return fallback;
    const auto& value = json.at(key);
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() > 1'000'000)
        throw Error(name, std::string("'") + key + "' must be a whole number from 1 to 1000000");
    return value.get<std::uint32_t>();
}

}  // namespace

void TimeModel::validate(std::string_view name) const {
    const auto check = [&](const LinkTiming& t, const char* level) {
        if (!(t.latency_us >= 0))
            throw Error(name, std::string(level) + ": latency_us must be 0 or more");
        if (!(t.rate_gbs > 0)) throw Error(name, std::string(level) + ": rate_gbs must be above 0");
    };
    check(socket, "socket");
    check(node, "node");
    check(network, "network");
    if (!(injection_gbs > 0)) throw Error(name, "injection_gbs must be above 0");
    if (network_cost < 1 || network_cost_step < 1)
        throw Error(name, "network_cost and network_cost_step must be at least 1");
}

TimeModel TimeModel::from_json(const nlohmann::json& json, std::string_view name) {
    if (!json.is_object()) throw Error(name, "a time model must be a JSON object");
    if (json.contains("schema") && json.at("schema") != kSchema)
        throw Error(name, "schema " + json.at("schema").dump() + " is not " + std::string(kSchema));
    TimeModel m;
    m.socket = link(json, "socket", m.socket, name);
    m.node = link(json, "node", m.node, name);
    m.network = link(json, "network", m.network, name);
    m.injection_gbs = number(json, "injection_gbs", m.injection_gbs, std::string(name));
    m.network_cost = whole(json, "network_cost", m.network_cost, name);
    m.network_cost_step = whole(json, "network_cost_step", m.network_cost_step, name);
    m.validate(name);
    return m;
}

TimeModel TimeModel::from_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) throw Error(path.string(), "cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    const auto json = nlohmann::json::parse(text.str(), nullptr, false);
    if (json.is_discarded()) throw Error(path.string(), "is not valid JSON");
    return from_json(json, path.string());
}

nlohmann::json TimeModel::to_json() const {
    const auto link_json = [](const LinkTiming& t) {
        return nlohmann::json{{"latency_us", t.latency_us}, {"rate_gbs", t.rate_gbs}};
    };
    return {{"schema", kSchema},
            {"socket", link_json(socket)},
            {"node", link_json(node)},
            {"network", link_json(network)},
            {"injection_gbs", injection_gbs},
            {"network_cost", network_cost},
            {"network_cost_step", network_cost_step}};
}

double TimeModel::node_time_s(const CommMatrix& matrix, const Topology& topology,
                              const Placement& placement) const {
    if (placement.size() != matrix.size())
        throw Error("placement", "has " + std::to_string(placement.size()) + " tasks, the matrix " +
                                     std::to_string(matrix.size()));
    std::size_t package = topology.level_count();
    for (std::size_t l = 0; l < topology.level_count(); ++l)
        if (topology.level_kind(l) == LevelKind::kPackage) package = l;
    std::vector<double> per_task(matrix.size(), 0.0);
    matrix.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value events) {
        const bool one_socket =
            package == topology.level_count() ||
            topology.ancestor(placement[i], package) == topology.ancestor(placement[j], package);
        const double us =
            static_cast<double>(events) * (one_socket ? socket.latency_us : node.latency_us);
        per_task[i] += us;
        per_task[j] += us;
    });
    double most = 0;
    for (const double t : per_task) most = std::max(most, t);
    return most * 1e-6;
}

}  // namespace cdsm
