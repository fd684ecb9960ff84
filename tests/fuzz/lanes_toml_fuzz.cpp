// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml as an admin writes it: parse_config must answer with a Config or an
// error naming file:line, never crash; a node's view must resolve the same way.
#include "core/lanes_toml.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto text = lanes::fuzz::as_text(data, size);
    auto config = lanes::parse_config(text, "/etc/slurm/lanes.toml");
    if (!config) {
        LANES_FUZZ_ASSERT(!config.error().message.empty());
        return 0;
    }
    (void)lanes::node_config_for(config->node, "node1");
    return 0;
}
