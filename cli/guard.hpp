#pragma once
// The last line of defence of `main`: whatever a command throws — a bug's logic_error, an
// allocation that failed, something that is not even a std::exception — becomes one error
// line and exit status 1, never std::terminate and a signal.
#include <exception>
#include <new>
#include <ostream>

namespace trainsim::cli {

template <class Command>
int guarded(Command&& command, std::ostream& err) noexcept {
  try {
    return command();
  } catch (const std::bad_alloc&) {
    err << "trainsim: error: out of memory (the scenario needs more than this machine or its limits allow; try "
           "--fidelity fast, or a smaller --max-memory so that the run is refused before it starts)\n";
  } catch (const std::exception& e) {
    err << "trainsim: error: " << e.what()
        << " (an unexpected failure, which is a trainsim bug: please report it with the input that caused it)\n";
  } catch (...) {
    err << "trainsim: error: an unknown exception (a trainsim bug: please report it with the input that caused "
           "it)\n";
  }
  return 1;
}

}  // namespace trainsim::cli
