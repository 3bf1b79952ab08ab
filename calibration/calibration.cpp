#include "calibration/calibration.hpp"

namespace trainsim::calibration {
const char* status() { return "calibration harness not built yet"; }
}  // namespace trainsim::calibration
