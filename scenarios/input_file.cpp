#include "scenarios/input_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <sys/stat.h>

namespace trainsim::scenarios {

InputFile read_input_file(const std::string& path, std::size_t max_bytes) {
  InputFile out;
  auto fail = [&](std::string why) {
    out.text.clear();
    out.error = std::move(why);
    return out;
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) return fail(std::strerror(errno));
  // What was opened is checked, not the path again: the path could change in between.
  struct stat st {};
  if (::fstat(::fileno(in.get()), &st) != 0) return fail(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail(std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) {
    return fail("not a regular file (a device, pipe or socket is not read: /dev/zero, for one, never ends)");
  }
  const auto too_large = [&] {
    return fail(fmt::format("{} (more than {} MiB; no input of this kind is anywhere near that size)",
                            std::strerror(EFBIG), max_bytes >> 20));
  };
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) return too_large();
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof buffer, in.get());
    if (n < sizeof buffer && std::ferror(in.get())) return fail(std::strerror(errno));
    // The file can grow after fstat: the cap holds for what is read, too.
    if (n > max_bytes - out.text.size()) return too_large();
    out.text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  return out;
}

}  // namespace trainsim::scenarios
