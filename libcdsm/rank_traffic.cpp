// SPDX-License-Identifier: GPL-2.0
#include "cdsm/rank_traffic.hpp"

#include <algorithm>
#include <string>

#include "cdsm/error.hpp"

namespace cdsm {

RankTraffic RankTraffic::from_flows(std::size_t ranks, std::vector<Flow> flows) {
    for (const Flow& f : flows)
        if (f.src >= ranks || f.dst >= ranks)
            throw Error("rank traffic", "flow " + std::to_string(f.src) + " -> " +
                                            std::to_string(f.dst) + " names a rank beyond the " +
                                            std::to_string(ranks) + " of the job");
    std::erase_if(flows, [](const Flow& f) { return f.src == f.dst; });
    std::sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) {
        return a.src != b.src ? a.src < b.src : a.dst < b.dst;
    });
    // Repeats of a pair (several files or records of one direction) add up in place.
    std::size_t out = 0;
    for (std::size_t k = 0; k < flows.size(); ++k) {
        if (out > 0 && flows[out - 1].src == flows[k].src && flows[out - 1].dst == flows[k].dst) {
            flows[out - 1].bytes += flows[k].bytes;
            flows[out - 1].messages += flows[k].messages;
        } else {
            flows[out++] = flows[k];
        }
    }
    flows.resize(out);
    RankTraffic traffic(ranks);
    traffic.flows_ = std::move(flows);
    return traffic;
}

RankTraffic RankTraffic::from_matrices(const CommMatrix& bytes, const CommMatrix* messages) {
    if (messages && messages->size() != bytes.size())
        throw Error("rank traffic", "the message matrix has " + std::to_string(messages->size()) +
                                        " ranks, the byte matrix " + std::to_string(bytes.size()));
    std::vector<Flow> flows;
    const auto split = [&](std::size_t i, std::size_t j, std::uint64_t b, std::uint64_t m) {
        const auto lo = static_cast<std::uint32_t>(i), hi = static_cast<std::uint32_t>(j);
        flows.push_back({lo, hi, b - b / 2, m - m / 2});
        flows.push_back({hi, lo, b / 2, m / 2});
    };
    bytes.for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value b) {
        split(i, j, b, messages ? messages->at(i, j) : 0);
    });
    // Pairs with messages but no bytes (zero-byte messages) still cost latency.
    if (messages)
        messages->for_each_pair([&](std::size_t i, std::size_t j, CommMatrix::Value m) {
            if (bytes.at(i, j) == 0) split(i, j, 0, m);
        });
    return from_flows(bytes.size(), std::move(flows));
}

std::uint64_t RankTraffic::total_bytes() const noexcept {
    std::uint64_t total = 0;
    for (const Flow& f : flows_) total += f.bytes;
    return total;
}

std::uint64_t RankTraffic::total_messages() const noexcept {
    std::uint64_t total = 0;
    for (const Flow& f : flows_) total += f.messages;
    return total;
}

CommMatrix RankTraffic::byte_matrix() const {
    CommMatrix m(ranks_);
    for (const Flow& f : flows_)
        if (f.bytes) m.add(f.src, f.dst, f.bytes);
    return m;
}

CommMatrix RankTraffic::message_matrix() const {
    CommMatrix m(ranks_);
    for (const Flow& f : flows_)
        if (f.messages) m.add(f.src, f.dst, f.messages);
    return m;
}

}  // namespace cdsm
