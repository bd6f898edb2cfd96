/* libFuzzer target for the DICOM reader (data/dicom.cxx through GDCM), series assembly
 * included. An input is one to four files separated by the line "\n--next-file--\n" (more
 * separators go into the fourth file); they are written as f0.dcm .. f3.dcm into a folder of
 * this process, which is then loaded through ir_volume_load, and a single file also as a file.
 * A load must give a usable volume (dims > 0, voxels, a valid type) or IR_ERR_INPUT /
 * IR_ERR_RUNTIME with one non-empty line; never a crash, a leak, undefined behaviour or a
 * large allocation (libFuzzer's -rss_limit_mb and -malloc_limit_mb catch those).
 * Built with clang++ -fsanitize=fuzzer,address,undefined from tests/data/CMakeLists.txt;
 * GDCM is the system's, not instrumented. The seeds (fuzz_corpus_dicom) say how they were made. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "data/volume.h"

namespace {

const char kSeparator[] = "\n--next-file--\n";
const size_t kMaxFiles = 4;

std::string folder; /* this process's scratch folder, made on the first input */

void remove_folder() {
  for (size_t k = 0; k < kMaxFiles; k++)
    std::remove((folder + "/f" + std::to_string(k) + ".dcm").c_str());
  rmdir(folder.c_str());
}

bool make_folder() {
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/inkray_fuzz_dicom_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) return false;
  folder = buf.data();
  std::atexit(remove_folder);
  return true;
}

/* The input's files, at most kMaxFiles, the last taking whatever follows. */
std::vector<std::string> split(const uint8_t *data, size_t size) {
  std::vector<std::string> files;
  std::string all(reinterpret_cast<const char *>(data), size);
  size_t start = 0, sep_len = sizeof kSeparator - 1;
  while (files.size() + 1 < kMaxFiles) {
    size_t at = all.find(kSeparator, start);
    if (at == std::string::npos) break;
    files.push_back(all.substr(start, at - start));
    start = at + sep_len;
  }
  files.push_back(all.substr(start));
  return files;
}

bool write_file(const std::string &path, const std::string &bytes) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

/* The loader's contract, whatever the input. */
void load_and_check(const std::string &source) {
  ir_volume_desc desc = {};
  desc.source = source.c_str();
  desc.io_threads = 1;
  ir_volume v;
  char err[IR_ERR_LEN] = "";
  ir_status status = ir_volume_load(&desc, &v, err);
  if (status == IR_OK) {
    if (!v.dims[0] || !v.dims[1] || !v.dims[2] || !v.voxels || v.type >= IR_VOXEL_TYPE_COUNT ||
        v.bytes != ir_volume_voxel_count(&v) * ir_voxel_type_size(v.type))
      __builtin_trap();
    ir_volume_free(&v);
    return;
  }
  if (status != IR_ERR_INPUT && status != IR_ERR_RUNTIME) __builtin_trap();
  if (!err[0] || std::strchr(err, '\n')) __builtin_trap();
  if (v.voxels) __builtin_trap(); /* a failed load leaves the volume empty */
}

} // namespace

/* OpenJPEG (GDCM's JPEG 2000 decoder) leaks its image and codec structures, GDCM's JPEG-LS
 * codec its stream buffer, and GDCM's JPEG codec the libjpeg decompressor it does not destroy
 * on some errors (up to the image's size), when the compressed stream is corrupt: defects of
 * those libraries, outside inkray, which would stop every run at the first such input. Only
 * these are suppressed. */
extern "C" const char *__lsan_default_suppressions() {
  return "leak:libopenjp2.so\nleak:gdcm::JPEGLSCodec::\nleak:libgdcmjpeg8.so\n"
         "leak:libgdcmjpeg12.so\nleak:libgdcmjpeg16.so\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (folder.empty() && !make_folder()) return 0;
  std::vector<std::string> files = split(data, size);
  for (size_t k = 0; k < kMaxFiles; k++) {
    std::string path = folder + "/f" + std::to_string(k) + ".dcm";
    if (k < files.size()) {
      if (!write_file(path, files[k])) return 0;
    } else {
      std::remove(path.c_str());
    }
  }
  load_and_check(folder);
  /* One file: also named as a file (the multi-frame path, and the series found from a file). */
  if (files.size() == 1 || size % 2 == 1) load_and_check(folder + "/f0.dcm");
  return 0;
}
