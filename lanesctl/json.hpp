// The JSON reader and writer moved to lib/core (the signal fetcher parses
// Prometheus answers with it); lanesctl keeps including it from here.
#pragma once
#include "core/json.hpp"
