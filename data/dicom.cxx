/* DICOM series through GDCM (C++ behind the C loader interface: ir_load_dicom).
 *
 * Read: a folder holding a series, or one file of it (the rest of its series is then read from
 * the same folder). Files that are not DICOM are skipped. Each file's header is read up to the
 * pixel data and the files are grouped by SeriesInstanceUID; a folder of several series loads
 * the one asked for with --series UID, else the largest, and names the others in the volume's
 * note. Single-frame slices are ordered by their position along the slice normal
 * (ImagePositionPatient projected on the cross product of the ImageOrientationPatient
 * vectors), never by file name or instance number; the slice spacing is the measured distance
 * between neighbours (a spread up to 10% of it is accepted with a note giving the spacing
 * used; more, or two slices at one position, is refused as a missing or duplicate slice).
 * Multi-frame files (enhanced CT/MR and others) take the origin, spacing and rescaling from
 * their functional groups (the shared ones, else the first frame's), else from the top level. Pixel data in any
 * transfer syntax GDCM decodes (JPEG lossless, JPEG 2000, JPEG-LS, RLE, deflate). Rescale
 * slope and intercept are applied (HU for CT), and the values kept in the narrowest voxel type
 * that holds them exactly (ir_volume_from_samples); spacing from PixelSpacing (row spacing,
 * then column spacing: y, then x). Modality and SeriesDescription go into the volume.
 * Refused: several samples a pixel (colour), slices of different sizes or orientations,
 * single-frame slices without a position, series mixing multi-frame files, pixel data
 * shorter than the header says, and files whose structure is corrupt: each file's elements
 * (and JPEG headers) are walked before GDCM reads it, since GDCM allocates what a corrupt
 * length claims and asserts (aborts the process) on much that is malformed; a corrupt Part 10
 * file in a folder is an error naming it and the byte, never a slice left out. GDCM itself runs
 * only in child processes (below), so that an abort the walk did not foresee refuses the file
 * it was reading instead of ending the program.
 * tests/data/fuzz_dicom.cxx fuzzes all of this. */
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gdcmAttribute.h>
#include <gdcmDict.h>
#include <gdcmDicts.h>
#include <gdcmGlobal.h>
#include <gdcmPixmapReader.h>
#include <gdcmSequenceOfFragments.h>
#include <gdcmSequenceOfItems.h>
#include <gdcmReader.h>
#include <gdcmTrace.h>
#include <zlib.h>

#include "data/volume_internal.h"

namespace {

/* Compressed pixel data cannot expand beyond this many bytes per byte of file: checked before
 * the volume is allocated. */
const size_t kMaxRatio = 4096;
/* Slice distances within 1% of the median are even; within 10% they are accepted with a note;
 * beyond that a slice is missing (or duplicated). */
const double kEvenTolerance = 0.01;
const double kAcceptTolerance = 0.10;

/* A slice's numbers: plain data, so that they cross from the child process that reads the
 * header (read_headers_isolated) as they are. */
struct slice_numbers {
  size_t file_size = 0;
  bool encapsulated = false;
  bool rle = false;          /* RLE Lossless: checked here before GDCM decodes it */
  bool j2k = false;          /* JPEG 2000: its image size checked here before GDCM decodes it */
  bool jpeg = false;         /* JPEG or JPEG-LS: the same, from the frame header */
  size_t pixel_value_at = 0; /* where the Pixel Data value begins in the file (uncompressed) */
  unsigned rows = 0, cols = 0, frames = 1, samples = 1, bits = 0, sign = 0;
  bool have_position = false, have_orientation = false;
  double position[3] = {0, 0, 0}, orientation[6] = {1, 0, 0, 0, 1, 0};
  double pixel_spacing[2] = {1, 1};
  double slope = 1, intercept = 0;
  double frame_spacing = 1; /* multi-frame: the distance between frames */
  double depth = 0; /* position along the slice normal */
};

struct slice_info : slice_numbers {
  std::string path;
  std::string series, modality, description;
};

std::string trimmed_string(const gdcm::DataSet &ds, uint16_t group, uint16_t element) {
  const gdcm::Tag tag(group, element);
  if (!ds.FindDataElement(tag)) return std::string();
  const gdcm::DataElement &de = ds.GetDataElement(tag);
  const gdcm::ByteValue *bv = de.GetByteValue();
  if (!bv || !bv->GetPointer()) return std::string();
  std::string s(bv->GetPointer(), bv->GetLength());
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  size_t start = s.find_first_not_of(' ');
  return start == std::string::npos ? std::string() : s.substr(start);
}

/* Backslash-separated decimal strings; true when exactly `count` numbers are there. */
bool parse_numbers(const std::string &s, double *out, int count) {
  if (s.empty()) return false;
  const char *p = s.c_str();
  for (int k = 0; k < count; k++) {
    char *end = nullptr;
    double v = std::strtod(p, &end);
    if (end == p || !std::isfinite(v)) return false;
    out[k] = v;
    p = end;
    while (*p == ' ') p++;
    if (k + 1 < count) {
      if (*p != '\\') return false;
      p++;
    }
  }
  return true;
}

template <uint16_t G, uint16_t E> unsigned us_value(const gdcm::DataSet &ds, unsigned fallback) {
  if (!ds.FindDataElement(gdcm::Tag(G, E))) return fallback;
  gdcm::Attribute<G, E> at;
  at.SetFromDataSet(ds);
  return at.GetValue();
}

/* A cheap look before GDCM parses a file: Part 10 files have "DICM" after the 128-byte
 * preamble; old files without one start with a group 0002 or 0008 tag. Anything else (a raw
 * volume, notes, thumbnails) is skipped without reading it. */
bool looks_like_dicom(const std::string &path, bool *part10) {
  *part10 = false;
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char b[132];
  size_t got = std::fread(b, 1, sizeof b, f);
  std::fclose(f);
  if (got == sizeof b && std::memcmp(b + 128, "DICM", 4) == 0) return *part10 = true;
  return got >= 8 && (b[0] == 0x08 || b[0] == 0x02) && b[1] == 0x00 && b[3] == 0x00;
}

/* ---- The file's structure, checked before GDCM reads it ----------------------------------
 * GDCM allocates every element's value at its declared length before reading it, and recurses
 * into nested sequences without a limit: a corrupt length of 4 GB in a file of 1 KB is a 4 GB
 * allocation, and deeply nested sequences exhaust the stack. So each file's elements are walked
 * here first (tags and lengths only, in the file's transfer syntax): every declared length must
 * fit in what is left of the file, or of the sequence or item that holds it, sequences and
 * items must close, and nesting is limited. The first problem is reported with the element
 * and the byte where it starts. */
const int kMaxNesting = 16;
const uint32_t kUndefined = 0xffffffffu;

class structure_check {
public:
  structure_check(const unsigned char *b, size_t n) : b_(b), n_(n) {}
  /* The whole file; false with `why` set on the first problem. */
  bool file(std::string &why);
  /* Where the top level's Pixel Data value begins: the file's size without one, SIZE_MAX in a
   * deflated data set (its lengths were checked inflated). Found here rather than from GDCM's
   * data set lengths, which assert on odd-length elements. */
  size_t pixel_value_at() const { return deflated_ ? SIZE_MAX : pixel_at_ ? pixel_at_ : n_; }
  bool walk();

private:
  const unsigned char *b_;
  size_t n_;
  bool big_ = false;
  std::string why_;
  std::vector<unsigned char> inflated_; /* a deflated data set, inflated */
  bool jpeg_ = false;                   /* a JPEG (ISO 10918) transfer syntax */
  bool j2k_ = false;                    /* a JPEG 2000 transfer syntax */
  bool deflated_ = false;
  size_t pixel_at_ = 0;                 /* the top-level Pixel Data value, 0 before it is seen */

  uint16_t u16(size_t at) const {
    return big_ ? (uint16_t)(b_[at] << 8 | b_[at + 1]) : (uint16_t)(b_[at] | b_[at + 1] << 8);
  }
  uint32_t u32(size_t at) const {
    return big_ ? (uint32_t)b_[at] << 24 | (uint32_t)b_[at + 1] << 16 | (uint32_t)b_[at + 2] << 8 | b_[at + 3]
                : (uint32_t)b_[at] | (uint32_t)b_[at + 1] << 8 | (uint32_t)b_[at + 2] << 16 |
                      (uint32_t)b_[at + 3] << 24;
  }
  bool fail(size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
  bool starts_item(size_t at, size_t end) const {
    return end - at >= 8 && u16(at) == 0xfffe && u16(at + 2) == 0xe000;
  }
  bool elements(size_t &pos, size_t end, bool explicit_vr, bool undefined, int depth);
  bool items(size_t &pos, size_t end, bool explicit_vr, bool undefined, int depth, bool fragments);
  bool inflate_data_set(size_t from);
  bool jpeg_frame_header(size_t at, size_t len);
  bool j2k_main_header(size_t at, size_t len, bool first);
};

/* GDCM finds out whether JPEG 2000 data are lossless by walking the codestream's main header
 * itself, without checking that a marker segment's length fits in what is left (it reads on
 * past the fragment) or that COD is long enough. So each fragment that starts a codestream
 * (SOC) has its main header walked here up to SOD, every segment within the fragment. The
 * first fragment must be a codestream: DICOM has no JP2 file boxes, which GDCM parses too. */
bool structure_check::j2k_main_header(size_t at, size_t len, bool first) {
  const unsigned char *j = b_ + at;
  bool soc = len >= 2 && j[0] == 0xff && j[1] == 0x4f;
  if (!soc) return first ? fail(at, "JPEG 2000 data that do not start a codestream") : true;
  size_t pos = 2;
  while (pos + 2 <= len) {
    unsigned marker = (unsigned)j[pos] << 8 | j[pos + 1];
    pos += 2;
    if (marker == 0xff93) return true; /* SOD: GDCM stops here */
    bool no_length = (marker >= 0xff30 && marker <= 0xff3f) || marker == 0xff4f ||
                     marker == 0xffd9 || marker == 0xff92;
    if (no_length) continue;
    if (len - pos < 2) break;
    size_t seg = (size_t)j[pos] << 8 | j[pos + 1];
    if (seg < 2) return true; /* GDCM stops here too */
    if (seg > len - pos)
      return fail(at + pos - 2, "JPEG 2000 data: marker %04X claims %zu bytes, %zu are left",
                  marker, seg, len - pos);
    if (marker == 0xff52 && seg < 12) return fail(at + pos - 2, "JPEG 2000 data: COD is cut short");
    pos += seg;
  }
  return fail(at, "JPEG 2000 data: the main header is cut short");
}

/* GDCM's JPEG codecs assert (abort) on what libjpeg merely warns about while reading the
 * headers (bytes between segments, a JFIF version other than 1, a thumbnail of the wrong
 * size, an unknown Adobe transform) and on frame headers they do not expect (precisions other
 * than 8, 12 and 16 bits, colour). Only grey images are read here, so the headers of each
 * fragment that starts an image (SOI) are walked up to the scan, checked before GDCM. */
bool structure_check::jpeg_frame_header(size_t at, size_t len) {
  const unsigned char *j = b_ + at;
  if (len < 2 || j[0] != 0xff || j[1] != 0xd8) return true; /* the rest of a frame */
  size_t pos = 2;
  bool frame = false;
  while (pos + 4 <= len) {
    if (j[pos] != 0xff) return fail(at + pos, "JPEG data: bytes between segments");
    unsigned marker = j[pos + 1];
    if (marker == 0xff) {
      pos++;
      continue;
    }
    if (marker == 0xda) {
      if (!frame) break;
      return true;
    }
    size_t seg = (size_t)j[pos + 2] << 8 | j[pos + 3];
    if (seg < 2 || pos + 2 + seg > len) return fail(at + pos, "JPEG data: a segment is cut short");
    const unsigned char *v = j + pos + 4;
    size_t vlen = seg - 2;
    bool sof = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (sof) {
      if (vlen < 6) return fail(at + pos, "JPEG data: the frame header is cut short");
      unsigned precision = v[0], components = v[5];
      if (components != 1)
        return fail(at + pos, "JPEG data of %u components: only grey images are read", components);
      if (precision != 8 && precision != 12 && precision != 16)
        return fail(at + pos, "JPEG data of %u-bit precision: GDCM reads 8, 12 or 16", precision);
      frame = true;
    } else if (marker == 0xe0 && vlen >= 14 && std::memcmp(v, "JFIF", 5) == 0) {
      if (v[5] != 1 || vlen - 14 != 3u * v[12] * v[13])
        return fail(at + pos, "JPEG data: a JFIF header libjpeg warns about");
    } else if (marker == 0xee && vlen >= 12 && std::memcmp(v, "Adobe", 5) == 0 && v[11] > 2) {
      return fail(at + pos, "JPEG data: an unknown Adobe transform");
    }
    pos += 2 + seg;
  }
  return fail(at, "JPEG data without a frame header before its scan");
}

bool structure_check::fail(size_t at, const char *fmt, ...) {
  char buf[200];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  why_ = std::string(buf) + " (at byte " + std::to_string(at) + ")";
  return false;
}

/* VRs with a 4-byte length after two reserved bytes in explicit VR encoding. */
bool long_vr(const unsigned char *vr) {
  static const char *const names[] = {"OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV",
                                      "UC", "UN", "UR", "UT", "UV"};
  for (const char *n : names)
    if (vr[0] == n[0] && vr[1] == n[1]) return true;
  return false;
}

/* The VRs of PS3.5 6.2. GDCM reads an element with another VR in explicit VR data as if it
 * were implicit, taking its value's first bytes for a 4-byte length: refused here instead. */
bool is_vr(const unsigned char *vr) {
  static const char *const names[] = {"AE", "AS", "AT", "CS", "DA", "DS", "DT", "FD", "FL",
                                      "IS", "LO", "LT", "OB", "OD", "OF", "OL", "OV", "OW",
                                      "PN", "SH", "SL", "SQ", "SS", "ST", "SV", "TM", "UC",
                                      "UI", "UL", "UN", "UR", "US", "UT", "UV"};
  for (const char *n : names)
    if (vr[0] == n[0] && vr[1] == n[1]) return true;
  return false;
}

/* Data elements from pos up to end (a defined length) or to an item delimiter (undefined). */
bool structure_check::elements(size_t &pos, size_t end, bool explicit_vr, bool undefined,
                               int depth) {
  while (pos < end) {
    size_t at = pos;
    if (end - pos < 8) return fail(at, "truncated: an element header is cut short");
    uint16_t group = u16(pos), element = u16(pos + 2);
    if (group == 0xfffe) {
      /* Delimiters have a length of 0 (PS3.5 7.5); GDCM reads another one as a value. */
      if (element == 0xe00d && undefined) {
        if (u32(pos + 4) != 0) return fail(at, "an item delimiter with a length of %u", (unsigned)u32(pos + 4));
        pos += 8;
        return true;
      }
      return fail(at, "an item tag (FFFE,%04X) among the elements", element);
    }
    /* Group 0002 belongs to the File Meta Information only (PS3.10 7.1); met in the data set,
     * GDCM reads what follows in another way than this walk (a 2 KB file made it allocate
     * 771 MB: found by the fuzzer). */
    if (group == 0x0002) return fail(at, "a File Meta element (0002,%04X) inside the data set", element);
    uint32_t len;
    bool sequence = false, encapsulated = false;
    if (explicit_vr) {
      const unsigned char *vr = b_ + pos + 4;
      if (!is_vr(vr)) return fail(at, "element (%04X,%04X) has no valid VR ('%c%c')", group, element,
                                   std::isprint(vr[0]) ? vr[0] : '?', std::isprint(vr[1]) ? vr[1] : '?');
      if (long_vr(vr)) {
        if (end - pos < 12) return fail(at, "truncated: an element header is cut short");
        len = u32(pos + 8);
        pos += 12;
      } else {
        len = u16(pos + 6);
        pos += 8;
      }
      sequence = vr[0] == 'S' && vr[1] == 'Q';
      /* Undefined-length UN holds implicit VR little endian elements (PS3.5 6.2.2). */
      if (vr[0] == 'U' && vr[1] == 'N' && len == kUndefined) {
        size_t inner = pos;
        if (depth >= kMaxNesting) return fail(at, "sequences nested deeper than %d", kMaxNesting);
        bool saved = big_;
        big_ = false;
        bool ok = items(inner, end, false, true, depth + 1, false);
        big_ = saved;
        if (!ok) return false;
        pos = inner;
        continue;
      }
    } else {
      len = u32(pos + 4);
      pos += 8;
      /* Without VRs a sequence shows by its undefined length or an item at its start. */
      sequence = len == kUndefined || starts_item(pos, end);
    }
    encapsulated = group == 0x7fe0 && element == 0x0010 && len == kUndefined;
    /* Encapsulated pixel data is OB or OW (or UN); GDCM asserts on another VR with an undefined
     * length (found by the fuzzer: OF). */
    if (encapsulated && explicit_vr) {
      const unsigned char *vr = b_ + at + 4;
      bool ob_ow_un = vr[0] == 'O' && (vr[1] == 'B' || vr[1] == 'W');
      ob_ow_un = ob_ow_un || (vr[0] == 'U' && vr[1] == 'N');
      if (!ob_ow_un)
        return fail(at, "encapsulated pixel data (7FE0,0010) with VR %c%c, not OB or OW", vr[0], vr[1]);
    }
    if (group == 0x7fe0 && element == 0x0010 && depth == 0 && !pixel_at_) pixel_at_ = pos;
    if (len == kUndefined && !sequence && !encapsulated)
      return fail(at, "element (%04X,%04X) has an undefined length", group, element);
    if (len != kUndefined && len > end - pos)
      return fail(at, "truncated: element (%04X,%04X) claims %u bytes, %zu are left", group,
                  element, (unsigned)len, end - pos);
    if (encapsulated) {
      if (!items(pos, end, explicit_vr, true, depth, true)) return false;
    } else if (sequence) {
      if (depth >= kMaxNesting) return fail(at, "sequences nested deeper than %d", kMaxNesting);
      size_t stop = len == kUndefined ? end : pos + len;
      if (!items(pos, stop, explicit_vr, len == kUndefined, depth + 1, false)) return false;
    } else {
      pos += len;
    }
  }
  if (undefined) return fail(pos, "truncated: an item has no delimiter");
  return true;
}

/* The items of a sequence (data sets) or of encapsulated pixel data (fragments of bytes). */
bool structure_check::items(size_t &pos, size_t end, bool explicit_vr, bool undefined, int depth,
                            bool fragments) {
  size_t index = 0; /* of fragments, the first being the offset table */
  while (pos < end) {
    size_t at = pos;
    if (end - pos < 8) return fail(at, "truncated: an item header is cut short");
    if (u16(pos) != 0xfffe)
      return fail(at, "expected an item in %s, found (%04X,%04X)",
                  fragments ? "the pixel data" : "a sequence", u16(pos), u16(pos + 2));
    uint16_t element = u16(pos + 2);
    uint32_t len = u32(pos + 4);
    pos += 8;
    if (element == 0xe0dd && undefined) {
      /* A sequence delimiter has a length of 0; GDCM reads another one as a fragment's (found by
       * the fuzzer: 0xFFFFFFFB made it allocate 4 GiB). */
      if (len != 0) return fail(at, "a sequence delimiter with a length of %u", (unsigned)len);
      return true;
    }
    if (element != 0xe000) return fail(at, "unexpected tag (FFFE,%04X)", element);
    if (len == kUndefined) {
      if (fragments) return fail(at, "a pixel data fragment has an undefined length");
      if (!elements(pos, end, explicit_vr, true, depth)) return false;
      continue;
    }
    if (len > end - pos)
      return fail(at, "truncated: %s claims %u bytes, %zu are left",
                  fragments ? "a pixel data fragment" : "an item", (unsigned)len, end - pos);
    if (fragments) {
      if (index > 0 && jpeg_ && !jpeg_frame_header(pos, len)) return false;
      if (index > 0 && j2k_ && !j2k_main_header(pos, len, index == 1)) return false;
      index++;
      pos += len;
      continue;
    }
    size_t stop = pos + len;
    if (!elements(pos, stop, explicit_vr, false, depth)) return false;
  }
  if (undefined)
    return fail(pos, "truncated: %s has no delimiter", fragments ? "the pixel data" : "a sequence");
  return true;
}

/* Deflated explicit VR little endian: the data set after the meta group is a raw deflate
 * stream; it is checked inflated (as GDCM reads it). */
bool structure_check::inflate_data_set(size_t from) {
  z_stream z = {};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) return fail(from, "cannot inflate the data set");
  z.next_in = const_cast<unsigned char *>(b_ + from);
  z.avail_in = (uInt)(n_ - from);
  unsigned char chunk[16384];
  int rc = Z_OK;
  /* Deflate expands at most about 1032 times: the file's size bounds this buffer. */
  while (rc == Z_OK) {
    z.next_out = chunk;
    z.avail_out = sizeof chunk;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    inflated_.insert(inflated_.end(), chunk, chunk + (sizeof chunk - z.avail_out));
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break; /* cut short */
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return fail(from, "the deflated data set is corrupt or cut short");
  return true;
}

bool structure_check::file(std::string &why) {
  bool ok = walk();
  why = why_;
  return ok;
}

bool structure_check::walk() {
  size_t pos = 0;
  std::string syntax;
  bool part10 = n_ >= 132 && std::memcmp(b_ + 128, "DICM", 4) == 0;
  if (part10) {
    /* The meta group: explicit VR little endian, whatever the data set's syntax. GDCM guesses
     * (a byte order among others) when it is missing, and checking its guess is not possible. */
    pos = 132;
    if (n_ - pos < 8 || b_[pos] != 0x02 || b_[pos + 1] != 0x00)
      return fail(pos, "no File Meta Information (group 0002) after the preamble");
    while (n_ - pos >= 8 && b_[pos] == 0x02 && b_[pos + 1] == 0x00) {
      size_t at = pos;
      const unsigned char *vr = b_ + pos + 4;
      if (!is_vr(vr)) return fail(at, "meta element has no valid VR");
      size_t hdr = long_vr(vr) ? 12 : 8;
      if (n_ - pos < hdr) return fail(at, "truncated: a meta element is cut short");
      uint32_t len = hdr == 12 ? u32(pos + 8) : u16(pos + 6);
      if (len > n_ - pos - hdr)
        return fail(at, "truncated: meta element (0002,%04X) claims %u bytes, %zu are left",
                    u16(pos + 2), (unsigned)len, n_ - pos - hdr);
      if (u16(pos + 2) == 0x0010) {
        syntax.assign(reinterpret_cast<const char *>(b_ + pos + hdr), len);
        while (!syntax.empty() && (syntax.back() == '\0' || syntax.back() == ' ')) syntax.pop_back();
      }
      pos += hdr + len;
    }
    /* The group length (0002,0000), where given, is where GDCM ends the meta group: elements
     * that do not end there would be read from another place than this walk's (found by the
     * fuzzer: a 2 KB file made GDCM allocate 771 MB). */
    if (n_ >= 144 && u16(132) == 0x0002 && u16(134) == 0x0000 && b_[136] == 'U' && b_[137] == 'L' &&
        u16(138) == 4) {
      size_t stated = 144 + (size_t)u32(140);
      if (stated != pos)
        return fail(132, "the File Meta group length (0002,0000) says %zu bytes, its elements take %zu",
                    stated - 144, pos - 144);
    }
  }
  bool explicit_vr = syntax != "1.2.840.10008.1.2";
  big_ = syntax == "1.2.840.10008.1.2.2";
  /* 1.2.840.10008.1.2.4.50 to .4.79: JPEG baseline, extended, lossless (not JPEG-LS, .80). */
  jpeg_ = syntax.compare(0, 21, "1.2.840.10008.1.2.4.5") == 0 ||
          syntax.compare(0, 21, "1.2.840.10008.1.2.4.6") == 0 ||
          syntax.compare(0, 21, "1.2.840.10008.1.2.4.7") == 0;
  /* .4.90 to .4.93 JPEG 2000, .4.201 to .4.203 High-Throughput JPEG 2000. */
  j2k_ = syntax.compare(0, 21, "1.2.840.10008.1.2.4.9") == 0 ||
         syntax.compare(0, 21, "1.2.840.10008.1.2.4.2") == 0;
  /* GDCM asserts (aborts) when the file ends right after its meta group; an image file has a
   * data set there anyway. */
  if (part10 && n_ - pos < 8) return fail(pos, "no data set after the File Meta Information");
  /* GDCM switches byte order when the first group looks swapped: one that reads as a small
   * even group in the syntax's order is the only first element both read the same way. */
  if (n_ - pos >= 8) {
    uint16_t first = u16(pos);
    if (first < 0x0004 || first > 0x7fe0 || (first & 1))
      return fail(pos, "the data set's first element (%04X,%04X) is not a plausible one", first,
                  u16(pos + 2));
  }
  /* GDCM reads a data set whose first element has no VR as implicit, whatever the meta says;
   * files without a meta group have their syntax guessed the same way. */
  if (n_ - pos >= 8 && !is_vr(b_ + pos + 4)) explicit_vr = false;
  bool ok;
  if (syntax == "1.2.840.10008.1.2.1.99") {
    deflated_ = true;
    ok = inflate_data_set(pos);
    if (ok) {
      structure_check inner(inflated_.data(), inflated_.size());
      size_t p = 0;
      ok = inner.elements(p, inflated_.size(), true, false, 0);
      if (!ok) why_ = "in the deflated data set: " + inner.why_;
    }
  } else {
    ok = elements(pos, n_, explicit_vr, false, 0);
  }
  return ok;
}

/* Mapped, not read: only the tags and lengths are looked at, and multi-frame files are large. */
bool check_structure(const std::string &path, size_t *pixel_at, std::string &why) {
  int fd = open(path.c_str(), O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    why = "cannot open the file";
    return false;
  }
  size_t n = (size_t)st.st_size;
  void *map = n ? mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  close(fd);
  if (n && map == MAP_FAILED) {
    why = "cannot map the file";
    return false;
  }
  structure_check check(static_cast<const unsigned char *>(map), n);
  bool ok = check.file(why);
  *pixel_at = check.pixel_value_at();
  if (n) munmap(map, n);
  return ok;
}

/* The data set of the first item of sequence `tag` in ds, or null. Only elements GDCM already
 * holds as sequences are looked into: nothing is parsed here. */
const gdcm::DataSet *first_item(const gdcm::DataSet &ds, uint16_t group, uint16_t element) {
  const gdcm::Tag tag(group, element);
  if (!ds.FindDataElement(tag)) return nullptr;
  const gdcm::DataElement &de = ds.GetDataElement(tag);
  if (de.IsEmpty()) return nullptr;
  const gdcm::SequenceOfItems *sq = dynamic_cast<const gdcm::SequenceOfItems *>(&de.GetValue());
  if (!sq || sq->GetNumberOfItems() < 1) return nullptr;
  return &sq->GetItem(1).GetNestedDataSet();
}

/* Functional group macro `macro` of an enhanced multi-frame file: from the shared group, else
 * from the first frame's (PS3.3 C.7.6.16). */
const gdcm::DataSet *functional_group(const gdcm::DataSet &ds, uint16_t group, uint16_t element) {
  for (uint16_t groups : {uint16_t(0x9229), uint16_t(0x9230)}) {
    const gdcm::DataSet *fg = first_item(ds, 0x5200, groups);
    const gdcm::DataSet *macro = fg ? first_item(*fg, group, element) : nullptr;
    if (macro) return macro;
  }
  return nullptr;
}

/* Spacing, position and rescaling of a multi-frame file, read here from its functional groups
 * rather than through gdcm::ImageReader, whose geometry helpers assert (abort the process) on
 * functional groups that are missing or malformed. Values not there keep the top level's. */
void read_frame_geometry(const gdcm::DataSet &ds, slice_info &s) {
  double v[3];
  if (parse_numbers(trimmed_string(ds, 0x0018, 0x0088), v, 1) && v[0] > 0) s.frame_spacing = v[0];
  if (const gdcm::DataSet *pm = functional_group(ds, 0x0028, 0x9110)) {
    if (parse_numbers(trimmed_string(*pm, 0x0028, 0x0030), v, 2) && v[0] > 0 && v[1] > 0) {
      s.pixel_spacing[0] = v[0];
      s.pixel_spacing[1] = v[1];
    }
    if (parse_numbers(trimmed_string(*pm, 0x0018, 0x0088), v, 1) && v[0] > 0) s.frame_spacing = v[0];
    else if (parse_numbers(trimmed_string(*pm, 0x0018, 0x0050), v, 1) && v[0] > 0) s.frame_spacing = v[0];
  }
  if (const gdcm::DataSet *pp = functional_group(ds, 0x0020, 0x9113))
    s.have_position = parse_numbers(trimmed_string(*pp, 0x0020, 0x0032), s.position, 3) || s.have_position;
  if (const gdcm::DataSet *pv = functional_group(ds, 0x0028, 0x9145)) {
    if (parse_numbers(trimmed_string(*pv, 0x0028, 0x1053), v, 1) && v[0] != 0) s.slope = v[0];
    if (parse_numbers(trimmed_string(*pv, 0x0028, 0x1052), v, 1)) s.intercept = v[0];
  }
}

/* GDCM reads the image's attributes through gdcm::Attribute (so does us_value), which asserts
 * (aborts) when an element's VR does not agree with the dictionary's: such an element of a
 * public tag is refused here. UN is the VR of a tag a writer did not know; it is let through
 * except in the image pixel module (group 0028), which GDCM reads whatever it says. */
bool vrs_match_dictionary(const gdcm::DataSet &ds, std::string &why) {
  const gdcm::Dict &dict = gdcm::Global::GetInstance().GetDicts().GetPublicDict();
  for (const gdcm::DataElement &de : ds.GetDES()) {
    const gdcm::Tag &tag = de.GetTag();
    const gdcm::VR vr = de.GetVR();
    if (tag.IsPrivate() || tag.GetElement() == 0 || vr == gdcm::VR::INVALID) continue;
    if (vr == gdcm::VR::UN && tag.GetGroup() != 0x0028) continue;
    const gdcm::VR want = dict.GetDictEntry(tag).GetVR();
    if (want == gdcm::VR::INVALID || want == gdcm::VR::UN || want.Compatible(vr)) continue;
    char buf[128];
    std::snprintf(buf, sizeof buf, "element (%04X,%04X) has VR %s, the standard's is %s",
                  tag.GetGroup(), tag.GetElement(), gdcm::VR::GetVRString(vr),
                  gdcm::VR::GetVRString(want));
    why = buf;
    return false;
  }
  return true;
}

enum class header_kind { image, not_image, corrupt };

/* The header up to the pixel data through GDCM, once check_structure found the whole file's
 * structure sound (pixel_at is where it found the pixel data): corrupt with the problem in
 * `why`, or not_image for DICOM files without an image (a DICOMDIR, a report) and files GDCM
 * cannot read. */
header_kind read_header(const std::string &path, size_t pixel_at, slice_info &s, std::string &why) {
  gdcm::Reader reader;
  reader.SetFileName(path.c_str());
  if (!reader.ReadUpToTag(gdcm::Tag(0x7fe0, 0x0010))) return header_kind::not_image;
  const gdcm::File &file = reader.GetFile();
  const gdcm::DataSet &ds = file.GetDataSet();
  if (!ds.FindDataElement(gdcm::Tag(0x0028, 0x0010))) return header_kind::not_image;
  if (!vrs_match_dictionary(ds, why)) return header_kind::corrupt;
  /* GDCM's PixmapReader asserts that a RecognitionCode, where there is one, is ACR-NEMA's. */
  const gdcm::Tag recognition(0x0008, 0x0010);
  if (ds.FindDataElement(recognition) && !ds.GetDataElement(recognition).IsEmpty()) {
    const gdcm::ByteValue *bv = ds.GetDataElement(recognition).GetByteValue();
    std::string code = bv && bv->GetPointer() ? std::string(bv->GetPointer(), bv->GetLength()) : "";
    if (code.compare(0, 8, "ACR-NEMA") != 0 && code.compare(0, 7, "ACRNEMA") != 0) {
      why = "RecognitionCode (0008,0010) is present but not ACR-NEMA's";
      return header_kind::corrupt;
    }
  }
  s.path = path;
  const gdcm::TransferSyntax &ts = file.GetHeader().GetDataSetTransferSyntax();
  s.encapsulated = ts.IsEncapsulated();
  s.rle = ts == gdcm::TransferSyntax::RLELossless;
  s.j2k = ts == gdcm::TransferSyntax::JPEG2000Lossless || ts == gdcm::TransferSyntax::JPEG2000 ||
          ts == gdcm::TransferSyntax::JPEG2000Part2Lossless || ts == gdcm::TransferSyntax::JPEG2000Part2;
  /* 1.2.840.10008.1.2.4.50 to .4.81: JPEG (ISO 10918) and JPEG-LS. */
  const std::string syntax = ts.GetString() ? ts.GetString() : "";
  s.jpeg = syntax.compare(0, 20, "1.2.840.10008.1.2.4.") == 0 && syntax.size() == 22 &&
           syntax[20] >= '5' && syntax[20] <= '8';
  s.pixel_value_at = pixel_at;
  s.series = trimmed_string(ds, 0x0020, 0x000e);
  s.modality = trimmed_string(ds, 0x0008, 0x0060);
  s.description = trimmed_string(ds, 0x0008, 0x103e);
  s.rows = us_value<0x0028, 0x0010>(ds, 0);
  s.cols = us_value<0x0028, 0x0011>(ds, 0);
  s.samples = us_value<0x0028, 0x0002>(ds, 1);
  s.bits = us_value<0x0028, 0x0100>(ds, 0);
  s.sign = us_value<0x0028, 0x0103>(ds, 0);
  double frames = 1;
  if (parse_numbers(trimmed_string(ds, 0x0028, 0x0008), &frames, 1) && frames >= 1 &&
      frames < 1e7)
    s.frames = (unsigned)frames;
  s.have_position = parse_numbers(trimmed_string(ds, 0x0020, 0x0032), s.position, 3);
  s.have_orientation = parse_numbers(trimmed_string(ds, 0x0020, 0x0037), s.orientation, 6);
  double spacing[2];
  if (parse_numbers(trimmed_string(ds, 0x0028, 0x0030), spacing, 2) && spacing[0] > 0 &&
      spacing[1] > 0) {
    s.pixel_spacing[0] = spacing[0];
    s.pixel_spacing[1] = spacing[1];
  }
  double v;
  if (parse_numbers(trimmed_string(ds, 0x0028, 0x1053), &v, 1) && v != 0) s.slope = v;
  if (parse_numbers(trimmed_string(ds, 0x0028, 0x1052), &v, 1)) s.intercept = v;
  if (s.frames > 1) read_frame_geometry(ds, s);
  return header_kind::image;
}

/* The sample type of BitsAllocated and PixelRepresentation (0 unsigned, 1 signed; GDCM marks
 * float pixel data 3 for 32 bits and 4 for 64). Decided here rather than by
 * gdcm::PixelFormat::GetScalarType, which asserts (aborts) on other combinations. */
bool sample_type_of(unsigned bits, unsigned representation, ir_sample_type *out) {
  if (representation == 3 && bits == 32) return *out = IR_SAMPLE_FLOAT32, true;
  if (representation == 4 && bits == 64) return *out = IR_SAMPLE_FLOAT64, true;
  if (representation > 1) return false;
  bool sgn = representation == 1;
  switch (bits) {
  case 8: *out = sgn ? IR_SAMPLE_INT8 : IR_SAMPLE_UINT8; return true;
  case 16: *out = sgn ? IR_SAMPLE_INT16 : IR_SAMPLE_UINT16; return true;
  case 32: *out = sgn ? IR_SAMPLE_INT32 : IR_SAMPLE_UINT32; return true;
  default: return false;
  }
}

double stored_value(const unsigned char *p, ir_sample_type t, size_t i) {
  switch (t) {
  case IR_SAMPLE_INT8: return reinterpret_cast<const int8_t *>(p)[i];
  case IR_SAMPLE_UINT8: return p[i];
  case IR_SAMPLE_INT16: return reinterpret_cast<const int16_t *>(p)[i];
  case IR_SAMPLE_UINT16: return reinterpret_cast<const uint16_t *>(p)[i];
  case IR_SAMPLE_INT32: return reinterpret_cast<const int32_t *>(p)[i];
  case IR_SAMPLE_UINT32: return reinterpret_cast<const uint32_t *>(p)[i];
  case IR_SAMPLE_FLOAT32: return reinterpret_cast<const float *>(p)[i];
  default: return reinterpret_cast<const double *>(p)[i];
  }
}

void normal_of(const double o[6], double n[3]) {
  n[0] = o[1] * o[5] - o[2] * o[4];
  n[1] = o[2] * o[3] - o[0] * o[5];
  n[2] = o[0] * o[4] - o[1] * o[3];
}

struct series_group {
  std::string uid;
  std::vector<slice_info> slices;
  size_t frame_count() const {
    size_t n = 0;
    for (const slice_info &s : slices) n += s.frames;
    return n;
  }
};

std::string folder_of(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string series_label(const series_group &g) {
  const slice_info &s = g.slices.front();
  std::string label = (g.uid.empty() ? std::string("(no UID)") : g.uid) + " (" +
                      std::to_string(g.frame_count()) + " slices";
  if (!s.modality.empty()) label += ", " + s.modality;
  if (!s.description.empty()) label += " '" + s.description + "'";
  return label + ")";
}

/* Orders single-frame slices along the normal and measures the spacing. */
ir_status order_slices(std::vector<slice_info> &slices, const char *src, double *spacing,
                       std::string &note, char err[IR_ERR_LEN]) {
  *spacing = 1.0;
  if (slices.size() == 1) return IR_OK;
  const slice_info &first = slices.front();
  for (const slice_info &s : slices) {
    if (!s.have_position || !s.have_orientation)
      return ir_input_error(err, src,
                            "%s has no ImagePositionPatient/ImageOrientationPatient: the slices "
                            "cannot be ordered",
                            ir_display_name(s.path.c_str()));
    for (int k = 0; k < 6; k++)
      if (std::fabs(s.orientation[k] - first.orientation[k]) > 1e-3)
        return ir_input_error(err, src, "%s is oriented differently from %s: not one volume",
                              ir_display_name(s.path.c_str()), ir_display_name(first.path.c_str()));
  }
  double n[3];
  normal_of(first.orientation, n);
  for (slice_info &s : slices)
    s.depth = s.position[0] * n[0] + s.position[1] * n[1] + s.position[2] * n[2];
  std::sort(slices.begin(), slices.end(),
            [](const slice_info &a, const slice_info &b) { return a.depth < b.depth; });
  std::vector<double> gaps;
  for (size_t i = 1; i < slices.size(); i++) gaps.push_back(slices[i].depth - slices[i - 1].depth);
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (median <= 1e-6)
    return ir_input_error(err, src, "the slices do not advance along the slice normal "
                                    "(duplicate positions)");
  double worst = 0, mean = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < gaps.size(); i++) {
    double dev = std::fabs(gaps[i] - median) / median;
    if (dev > worst) {
      worst = dev;
      worst_at = i;
    }
    mean += gaps[i];
  }
  mean /= (double)gaps.size();
  if (worst > kAcceptTolerance) {
    const slice_info &a = slices[worst_at], &b = slices[worst_at + 1];
    const char *what = gaps[worst_at] < median ? "two slices too close (a duplicate?)"
                                               : "a gap (a missing slice?)";
    return ir_input_error(err, src,
                          "uneven slice spacing: %g between %s and %s, %g elsewhere: %s",
                          gaps[worst_at], ir_display_name(a.path.c_str()),
                          ir_display_name(b.path.c_str()), median, what);
  }
  *spacing = mean;
  if (worst > kEvenTolerance) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "slice distances vary by up to %.1f%% (%g to %g); using their mean, %g",
                  100 * worst, sorted.front(), sorted.back(), mean);
    note = buf;
  }
  return IR_OK;
}

/* One RLE frame (PS3.5 G.3): its header must give `segments` segments, each of which decodes
 * to exactly `plane` bytes within the frame. GDCM's RLE codec asserts (aborts) when a segment
 * decodes to more or less, or its data end first, so RLE frames are decoded here first (counted,
 * not stored). */
bool rle_frame_ok(const unsigned char *b, size_t n, unsigned segments, size_t plane, std::string &why) {
  auto u32 = [b](size_t at) {
    return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24;
  };
  if (n < 64) return why = "an RLE frame shorter than its 64-byte header", false;
  if (u32(0) != segments)
    return why = "an RLE frame of " + std::to_string(u32(0)) + " segments, " +
                 std::to_string(segments) + " expected",
           false;
  for (unsigned k = 0; k < segments; k++) {
    size_t pos = u32(4 + 4 * k), out = 0;
    if (pos < 64 || pos >= n) return why = "an RLE segment offset outside its frame", false;
    while (out < plane) {
      if (pos >= n) break;
      int run = (int8_t)b[pos++];
      if (run >= 0) {
        pos += (size_t)run + 1;
        out += (size_t)run + 1;
      } else if (run >= -127) {
        pos++;
        out += (size_t)(1 - run);
      }
      if (pos > n) break;
    }
    if (out != plane)
      return why = "RLE segment " + std::to_string(k + 1) + " decodes to " + std::to_string(out) +
                   " bytes, " + std::to_string(plane) + " expected",
             false;
  }
  return true;
}

/* A JPEG 2000 codestream's image (SIZ) must be the frame's: GDCM copies the decoded image into
 * a buffer of the DICOM rows and columns at the codestream's size and precision, so a larger
 * one overruns the heap (found by the fuzzer). One component, not subsampled, of at most
 * BitsAllocated bits. Fragments that do not start a codestream are the rest of one. */
bool j2k_frame_ok(const unsigned char *b, size_t n, const slice_info &s, std::string &why) {
  if (n < 4 || b[0] != 0xff || b[1] != 0x4f) return true;
  if (b[2] != 0xff || b[3] != 0x51) return why = "a JPEG 2000 codestream without SIZ after SOC", false;
  auto u32 = [b](size_t at) {
    return (uint32_t)b[at] << 24 | (uint32_t)b[at + 1] << 16 | (uint32_t)b[at + 2] << 8 | b[at + 3];
  };
  if (n < 4 + 41) return why = "a JPEG 2000 SIZ cut short", false;
  const size_t siz = 4;
  uint64_t width = (uint64_t)u32(siz + 4) - u32(siz + 12), height = (uint64_t)u32(siz + 8) - u32(siz + 16);
  unsigned components = (unsigned)b[siz + 36] << 8 | b[siz + 37];
  unsigned precision = (b[siz + 38] & 0x7f) + 1u, xr = b[siz + 39], yr = b[siz + 40];
  if (u32(siz + 4) < u32(siz + 12) || u32(siz + 8) < u32(siz + 16) || width != s.cols ||
      height != s.rows)
    return why = "a JPEG 2000 image of " + std::to_string((int64_t)width) + "x" +
                 std::to_string((int64_t)height) + " in a " + std::to_string(s.cols) + "x" +
                 std::to_string(s.rows) + " frame",
           false;
  if (components != 1 || xr != 1 || yr != 1)
    return why = "a JPEG 2000 image of " + std::to_string(components) +
                 " components or subsampled: only grey images are read",
           false;
  if (precision > s.bits)
    return why = "JPEG 2000 samples of " + std::to_string(precision) + " bits in " +
                 std::to_string(s.bits) + "-bit pixels",
           false;
  return true;
}

/* The frame header of a JPEG or JPEG-LS image (a fragment starting with SOI; others are the
 * rest of a frame) must give the frame's size: GDCM's decoders allocate what it says (a corrupt
 * 2 KB JPEG-LS slice of 16x16 claimed 15056x65535, 2 GB) before finding the data short. A line
 * count of 0 (JPEG's DNL, set after the scan) is left to the decoder. */
bool jpeg_frame_ok(const unsigned char *b, size_t n, const slice_info &s, std::string &why) {
  if (n < 2 || b[0] != 0xff || b[1] != 0xd8) return true;
  for (size_t pos = 2; pos + 4 <= n;) {
    if (b[pos] != 0xff) return why = "JPEG data: bytes between segments", false;
    unsigned marker = b[pos + 1];
    if (marker == 0xff) {
      pos++;
      continue;
    }
    if (marker == 0xda) break;
    size_t seg = (size_t)b[pos + 2] << 8 | b[pos + 3];
    if (seg < 2 || seg > n - pos - 2) return why = "JPEG data: a segment is cut short", false;
    bool sof = (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
                marker != 0xcc) || marker == 0xf7; /* 0xf7: JPEG-LS */
    if (sof) {
      if (seg < 8) return why = "JPEG data: the frame header is cut short", false;
      const unsigned char *v = b + pos + 4;
      unsigned precision = v[0], lines = (unsigned)v[1] << 8 | v[2], columns = (unsigned)v[3] << 8 | v[4];
      if ((lines != 0 && lines != s.rows) || columns != s.cols)
        return why = "a JPEG image of " + std::to_string(columns) + "x" + std::to_string(lines) +
                     " in a " + std::to_string(s.cols) + "x" + std::to_string(s.rows) + " frame",
               false;
      if (precision > s.bits)
        return why = "JPEG samples of " + std::to_string(precision) + " bits in " +
                     std::to_string(s.bits) + "-bit pixels",
               false;
      return true;
    }
    pos += 2 + seg;
  }
  return why = "JPEG data without a frame header before its scan", false;
}

/* The RLE, JPEG or JPEG 2000 frames of a file, checked before GDCM decodes them: one frame is the
 * fragments joined (as GDCM reads a single frame), several frames one fragment each. */
ir_status check_frames(const slice_info &s, const char *src, char err[IR_ERR_LEN]) {
  const char *name = ir_display_name(s.path.c_str());
  gdcm::Reader reader;
  reader.SetFileName(s.path.c_str());
  if (!reader.Read())
    return ir_input_error(err, src, "%s: GDCM cannot read the image (truncated or corrupt)", name);
  const gdcm::DataSet &ds = reader.GetFile().GetDataSet();
  const gdcm::Tag pixel_data(0x7fe0, 0x0010);
  const gdcm::SequenceOfFragments *sf =
      ds.FindDataElement(pixel_data) ? ds.GetDataElement(pixel_data).GetSequenceOfFragments() : nullptr;
  if (!sf || sf->GetNumberOfFragments() == 0)
    return ir_input_error(err, src, "%s: compressed pixel data without fragments", name);
  unsigned segments = s.bits / 8;
  size_t plane = (size_t)s.rows * s.cols;
  std::vector<std::vector<unsigned char>> frames;
  for (size_t k = 0; k < sf->GetNumberOfFragments(); k++) {
    const gdcm::ByteValue *bv = sf->GetFragment(k).GetByteValue();
    std::vector<unsigned char> bytes;
    if (bv && bv->GetPointer()) bytes.assign(bv->GetPointer(), bv->GetPointer() + bv->GetLength());
    if (s.frames == 1 && !frames.empty()) frames[0].insert(frames[0].end(), bytes.begin(), bytes.end());
    else frames.push_back(std::move(bytes));
  }
  std::string why;
  if (s.rle && frames.size() != s.frames)
    return ir_input_error(err, src, "%s: %zu RLE fragments for %u frames", name, frames.size(), s.frames);
  for (size_t k = 0; k < frames.size(); k++) {
    bool ok = s.rle    ? rle_frame_ok(frames[k].data(), frames[k].size(), segments, plane, why)
              : s.jpeg ? jpeg_frame_ok(frames[k].data(), frames[k].size(), s, why)
                       : j2k_frame_ok(frames[k].data(), frames[k].size(), s, why);
    if (!ok) return ir_input_error(err, src, "%s: frame %zu: %s", name, k + 1, why.c_str());
  }
  return IR_OK;
}

/* Reads one file's pixels (all frames) through GDCM, checking they match the series.
 * gdcm::PixmapReader, not ImageReader: the geometry comes from read_header, and ImageReader's
 * geometry helpers assert on malformed functional groups. */
ir_status read_pixels(const slice_info &s, const char *src, ir_sample_type type, size_t bytes,
                      unsigned char *dst, char err[IR_ERR_LEN]) {
  if (s.rle || s.j2k || s.jpeg) {
    ir_status status = check_frames(s, src, err);
    if (status != IR_OK) return status;
  }
  gdcm::PixmapReader reader;
  reader.SetFileName(s.path.c_str());
  const char *name = ir_display_name(s.path.c_str());
  if (!reader.Read())
    return ir_input_error(err, src, "%s: GDCM cannot read the image (truncated or corrupt)", name);
  const gdcm::Pixmap &image = reader.GetPixmap();
  ir_sample_type t;
  const gdcm::PixelFormat &pf = image.GetPixelFormat();
  if (!sample_type_of(pf.GetBitsAllocated(), pf.GetPixelRepresentation(), &t) || t != type)
    return ir_input_error(err, src, "%s: its pixel format differs from the series' first file",
                          name);
  /* GDCM reads a file cut short inside uncompressed pixel data, padding the rest. */
  if (!s.encapsulated && s.pixel_value_at != SIZE_MAX && s.pixel_value_at + bytes > s.file_size)
    return ir_input_error(err, src, "%s: truncated: %zu bytes, the pixel data need %zu from byte %zu",
                          name, s.file_size, bytes, s.pixel_value_at);
  if (image.GetBufferLength() != bytes)
    return ir_input_error(err, src, "%s: %lu bytes of pixels, expected %zu", name,
                          (unsigned long)image.GetBufferLength(), bytes);
  if (!image.GetBuffer(reinterpret_cast<char *>(dst)))
    return ir_input_error(err, src, "%s: GDCM cannot decode the pixel data (%s)", name,
                          reader.GetFile().GetHeader().GetDataSetTransferSyntax().GetString());
  return IR_OK;
}

/* ---- GDCM in child processes ------------------------------------------------------------
 * GDCM asserts, and so aborts the process, on some malformed input (Debian builds it with
 * assertions on): in its header reader, its pixmap reader and its decoders of compressed pixel
 * data (RLE, JPEG, JPEG-LS, JPEG 2000). The structure walk above refuses what is known to do
 * it, but no walk can foresee every case. So inkray calls GDCM only in child processes: one
 * reads the headers of all the files of a load, another the pixels of the chosen series, a
 * slice at a time into a window of memory shared with this process. A child that dies takes
 * only itself: the file it was reading is refused with its name, and this process goes on. It
 * costs two forks a load (about a millisecond each) and one copy of the pixels.
 *
 * INKRAY_DICOM_FAULT=NAME makes a child abort as GDCM would when it reads the file called NAME
 * (its header, or with NAME:pixels its pixels), and NAME:pixels-1GiB asks for 1 GiB there:
 * tests/data/test_dicom.c checks the containment with them, since every known real abort or
 * huge request is refused before GDCM sees the file. */

/* Whole writes and reads over the channel to a child; false when the other side is gone.
 * send(MSG_NOSIGNAL): a child that died must not take this process with it through SIGPIPE. */
bool send_all(int fd, const void *buf, size_t n) {
  const char *p = static_cast<const char *>(buf);
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

using steady = std::chrono::steady_clock;

enum class received { all, closed, late };

/* Reads n bytes unless the other side goes (closed) or `deadline` passes first (late). */
received recv_all(int fd, void *buf, size_t n, steady::time_point deadline) {
  char *p = static_cast<char *>(buf);
  while (n) {
    long long left = deadline == steady::time_point::max()
                         ? 1LL << 30
                         : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    if (left <= 0) return received::late;
    struct pollfd ready = {fd, POLLIN, 0};
    int r = poll(&ready, 1, (int)std::min(left, 1LL << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return received::closed;
    if (r == 0) continue; /* the deadline is checked above */
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return received::closed;
    p += k;
    n -= (size_t)k;
  }
  return received::all;
}

/* How long a child may take on one file before it is stopped and the file refused: a header
 * is read in milliseconds, a slice at tens of MB a second even from JPEG 2000. Generous, since
 * the disk may be a slow network share; INKRAY_DICOM_TIMEOUT (seconds) replaces the base. */
steady::time_point deadline_for(size_t bytes) {
  double base = 120;
  const char *given = std::getenv("INKRAY_DICOM_TIMEOUT");
  if (given && *given && std::strtod(given, nullptr) > 0) base = std::strtod(given, nullptr);
  double seconds = std::min(base + (double)bytes / 1e6, 1e7);
  return steady::now() + std::chrono::milliseconds((long long)(seconds * 1000));
}

bool fault_requested(const std::string &path, const char *what) {
  const char *fault = std::getenv("INKRAY_DICOM_FAULT");
  if (!fault || !*fault) return false;
  std::string want = std::string(ir_display_name(path.c_str())) + (*what ? ":" : "") + what;
  return want == fault;
}

#if defined(__SANITIZE_ADDRESS__)
#define INKRAY_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INKRAY_UNDER_ASAN 1
#endif
#endif

/* Caps what the child may allocate beyond what it inherited at `allowance` bytes (RLIMIT_DATA
 * over its data segment at the fork): a corrupt file can make GDCM ask for gigabytes, which it
 * then gets as std::bad_alloc. Not under AddressSanitizer, whose shadow memory counts as data;
 * its fuzzers cap each allocation instead (-malloc_limit_mb). */
void limit_memory(size_t allowance) {
#ifndef INKRAY_UNDER_ASAN
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) return;
  char line[256];
  unsigned long long data_kb = 0;
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) found = std::sscanf(line, "VmData: %llu kB", &data_kb) == 1;
  std::fclose(f);
  struct rlimit rl;
  if (!found || getrlimit(RLIMIT_DATA, &rl) != 0) return;
  rlim_t want = (rlim_t)(data_kb * 1024ull + allowance);
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) return; /* the user's own cap is lower */
  if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max) want = rl.rlim_max;
  rl.rlim_cur = want;
  setrlimit(RLIMIT_DATA, &rl);
#else
  (void)allowance;
#endif
}

/* How a child ended, and what that says of the file it was reading. */
struct child_end {
  bool crashed = false; /* a signal of a fault (abort, segfault, ...): the file is corrupt */
  bool late = false;    /* stopped here at its deadline: the file is refused too */
  std::string how;      /* " (signal 6)", " (exit 1)", "" */
};

/* A child process running `work` with one end of a socket pair; the other end is `fd`.
 * `allowance`: what the child may allocate (limit_memory). */
struct child_process {
  pid_t pid = -1;
  int fd = -1;
  child_process() = default;
  child_process(const child_process &) = delete;
  child_process &operator=(const child_process &) = delete;
  ~child_process() { kill_now(); }
  template <class Work> bool start(size_t allowance, Work work) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return false;
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t parent = getpid();
    pid = fork();
    if (pid < 0) {
      int saved = errno;
      close(fds[0]);
      close(fds[1]);
      errno = saved;
      return false;
    }
    if (pid == 0) {
      /* Ends with this process: a child left running would read on for no one. */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(0);
      /* Only the channel stays open (as fd 3): another descriptor of this process (another
       * child's channel, the application's pipes) held here would hide a death from whoever
       * waits on it. */
      if (fds[1] != 3 && dup2(fds[1], 3) < 0) _exit(1);
      if (close_range(4, ~0u, 0) != 0)
        for (int k = 4; k < 65536; k++) close(k);
      /* The default actions, not this process's handlers (a sanitizer's, a fuzzer's, Python's). */
      for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGINT, SIGTERM, SIGHUP, SIGQUIT})
        std::signal(sig, SIG_DFL);
      /* No core file of a copy of the whole program for a file GDCM could not read. */
      struct rlimit no_core = {0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
#ifndef INKRAY_UNDER_ASAN
      /* GDCM's assertion text would be a second line beside the refusal, which says it all.
       * (Under a sanitizer a report from the child must be seen: see finish.) */
      int quiet = open("/dev/null", O_WRONLY);
      if (quiet >= 0) dup2(quiet, STDERR_FILENO);
#endif
      limit_memory(allowance);
      try {
        work(3);
      } catch (...) {
        /* GDCM's exceptions, and bad_alloc: like an abort, the file being read is refused. */
      }
      _exit(0); /* no exit handlers: they are this process's */
    }
    close(fds[1]);
    fd = fds[0];
    return true;
  }
  /* Closes the channel and waits for the child; `late`: stopped first, for its deadline. */
  child_end finish(bool late = false) {
    child_end end;
    if (pid <= 0) return end;
    if (late) kill(pid, SIGKILL);
    int wstatus = stop();
    char how[32] = "";
    if (WIFSIGNALED(wstatus)) {
      int sig = WTERMSIG(wstatus);
      end.crashed = sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
      std::snprintf(how, sizeof how, " (signal %d)", sig);
    } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0) {
#ifdef INKRAY_UNDER_ASAN
      /* Under a sanitizer only its report (or libFuzzer's) ends a child with a status: a defect
       * to see, never a file to refuse quietly. */
      std::fprintf(stderr, "inkray: a DICOM child process ended with status %d: its report is above\n",
                   WEXITSTATUS(wstatus));
      std::abort();
#endif
      std::snprintf(how, sizeof how, " (exit %d)", WEXITSTATUS(wstatus));
    }
    end.late = late;
    end.how = how;
    return end;
  }
  void kill_now() {
    if (pid > 0) kill(pid, SIGKILL);
    stop();
  }

private:
  int stop() {
    if (fd >= 0) close(fd);
    fd = -1;
    int wstatus = 0;
    if (pid <= 0) return 0;
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    pid = -1;
    return wstatus;
  }
};

/* The message for a child that ended before answering about file `name`: the file's fault
 * when GDCM crashed on it or took too long (IR_ERR_INPUT), else the system's (IR_ERR_RUNTIME:
 * killed for memory, interrupted). */
ir_status child_failure(const child_end &end, const char *src, const char *name, const char *doing,
                        steady::time_point asked, char err[IR_ERR_LEN]) {
  if (end.late)
    return ir_input_error(err, src,
                          "%s: GDCM did not finish %s in %.0f s and was stopped: the file is corrupt (or the "
                          "disk too slow: INKRAY_DICOM_TIMEOUT=SECONDS gives it longer)",
                          name, doing, std::chrono::duration<double>(steady::now() - asked).count());
  if (end.crashed)
    return ir_input_error(err, src, "%s: GDCM failed %s%s: the file is corrupt", name, doing, end.how.c_str());
  std::snprintf(err, IR_ERR_LEN, "%s: the process reading %s was stopped%s%s", src, name, end.how.c_str(),
                end.how == " (signal 9)" ? ", perhaps by the system for lack of memory" : "");
  return IR_ERR_RUNTIME;
}

/* read_header's answer as it crosses from the child: the slice's numbers as they are, then its
 * strings (why, series, modality, description), each after its length. */
struct header_numbers {
  int kind;
  slice_numbers numbers;
  uint32_t lengths[4];
};

std::string pack_header(header_kind kind, const slice_info &s, const std::string &why) {
  header_numbers h;
  std::memset(static_cast<void *>(&h), 0, sizeof h); /* padding too: it crosses a socket */
  h.kind = (int)kind;
  h.numbers = s;
  const std::string *strings[4] = {&why, &s.series, &s.modality, &s.description};
  for (int k = 0; k < 4; k++) h.lengths[k] = (uint32_t)strings[k]->size();
  std::string out(reinterpret_cast<const char *>(&h), sizeof h);
  for (const std::string *str : strings) out += *str;
  return out;
}

received unpack_header(int fd, steady::time_point deadline, header_kind *kind, slice_info &s,
                       std::string &why) {
  header_numbers h;
  received got = recv_all(fd, &h, sizeof h, deadline);
  if (got != received::all) return got;
  *kind = (header_kind)h.kind;
  static_cast<slice_numbers &>(s) = h.numbers;
  std::string *strings[4] = {&why, &s.series, &s.modality, &s.description};
  for (int k = 0; k < 4; k++) {
    strings[k]->assign(h.lengths[k], '\0');
    if (h.lengths[k] && (got = recv_all(fd, &(*strings[k])[0], h.lengths[k], deadline)) != received::all)
      return got;
  }
  return received::all;
}

struct header_result {
  header_kind kind = header_kind::not_image;
  slice_info slice;
  std::string why;
};

ir_status no_child(const char *src, const char *what, char err[IR_ERR_LEN]) {
  std::snprintf(err, IR_ERR_LEN, "%s: cannot start a process to read the DICOM %s (%s)", src, what,
                std::strerror(errno));
  return IR_ERR_RUNTIME;
}

/* The header of every path: the structure walk here, then read_header of the sound files in
 * one child process (restarted after a file on which GDCM crashed or hung: that file is
 * corrupt). The walk is not put in the child: it is inkray's own code, and most corrupt files
 * stop there for the price of reading them. */
ir_status read_headers_isolated(const std::vector<std::string> &paths, std::vector<header_result> &out,
                                const char *src, char err[IR_ERR_LEN]) {
  out.assign(paths.size(), header_result());
  std::vector<size_t> sound, pixel_at(paths.size(), 0);
  size_t largest = 0;
  for (size_t i = 0; i < paths.size(); i++) {
    if (check_structure(paths[i], &pixel_at[i], out[i].why)) sound.push_back(i);
    else out[i].kind = header_kind::corrupt;
    struct stat st;
    if (stat(paths[i].c_str(), &st) == 0) largest = std::max(largest, (size_t)st.st_size);
  }
  /* A header is at most its file, which GDCM holds a few times over. */
  const size_t allowance = (size_t)(256u << 20) + 8 * largest;
  for (size_t next = 0; next < sound.size();) {
    child_process child;
    bool started = child.start(allowance, [&](int fd) {
      for (size_t k = next; k < sound.size(); k++) {
        const std::string &path = paths[sound[k]];
        slice_info s;
        std::string why;
        if (fault_requested(path, "")) std::abort();
        if (fault_requested(path, "hang")) pause();
        header_kind kind;
        try {
          kind = read_header(path, pixel_at[sound[k]], s, why);
        } catch (const std::bad_alloc &) {
          kind = header_kind::corrupt;
          why = "GDCM asked for more memory than its header can need: the file is corrupt";
        }
        std::string packed = pack_header(kind, s, why);
        if (!send_all(fd, packed.data(), packed.size())) return;
      }
    });
    if (!started) return no_child(src, "headers", err);
    received got = received::all;
    steady::time_point asked = steady::now();
    for (; next < sound.size(); next++) {
      header_result &r = out[sound[next]];
      asked = steady::now();
      got = unpack_header(child.fd, deadline_for(0), &r.kind, r.slice, r.why);
      if (got != received::all) break;
      r.slice.path = paths[sound[next]];
    }
    child_end end = child.finish(got == received::late);
    if (next < sound.size()) {
      const char *name = ir_display_name(paths[sound[next]].c_str());
      char why[IR_ERR_LEN];
      ir_status status = child_failure(end, src, name, "reading its header", asked, why);
      if (status == IR_ERR_RUNTIME) {
        std::memcpy(err, why, IR_ERR_LEN);
        return status;
      }
      /* Without the "SRC: NAME: " in front: the caller names the file itself. */
      const char *own = std::strstr(why, "GDCM ");
      out[sound[next]].kind = header_kind::corrupt;
      out[sound[next]].why = own ? own : why;
      next++;
    }
  }
  return IR_OK;
}

/* The pixels of every slice of a series (slice_bytes each, into dst in order) through
 * read_pixels in one child process, which hands them over one at a time through a shared
 * window. A child that dies names the slice it was reading. */
ir_status read_series_pixels(const std::vector<slice_info> &slices, const char *src,
                             ir_sample_type type, size_t slice_bytes, unsigned char *dst,
                             ir_progress *progress, char err[IR_ERR_LEN]) {
  void *window = mmap(nullptr, slice_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (window == MAP_FAILED) {
    std::snprintf(err, IR_ERR_LEN, "%s: no memory to read a DICOM slice (%zu bytes)", src, slice_bytes);
    return IR_ERR_RUNTIME;
  }
  struct answer {
    int status;
    char err[IR_ERR_LEN];
  };
  /* GDCM holds the file, the decoded slice and a decoder's working copies (openjpeg's are 32-bit
   * a sample): a few times the slice and the file, never gigabytes for a slice of kilobytes. */
  size_t largest = 0;
  for (const slice_info &s : slices) largest = std::max(largest, s.file_size);
  const size_t allowance = (size_t)(256u << 20) + 8 * (slice_bytes + largest);
  child_process child;
  bool started = child.start(allowance, [&](int fd) {
    for (const slice_info &s : slices) {
      answer a;
      std::memset(&a, 0, sizeof a);
      if (fault_requested(s.path, "pixels")) std::abort();
      if (fault_requested(s.path, "pixels-hang")) pause();
      try {
        if (fault_requested(s.path, "pixels-1GiB")) {
          char *volatile huge = new char[1u << 30]; /* volatile: not optimised away */
          delete[] huge;
        }
        a.status = (int)read_pixels(s, src, type, slice_bytes, static_cast<unsigned char *>(window), a.err);
      } catch (const std::bad_alloc &) {
        a.status = (int)ir_input_error(a.err, src, "%s: GDCM asked for more memory than a %zu-byte slice can need: the "
                                       "file is corrupt", ir_display_name(s.path.c_str()), slice_bytes);
      }
      char go = 0;
      /* The next slice waits until this one is copied out of the window. */
      if (!send_all(fd, &a, sizeof a) || a.status != IR_OK ||
          recv_all(fd, &go, 1, steady::time_point::max()) != received::all)
        return;
    }
  });
  if (!started) {
    ir_status status = no_child(src, "pixels", err);
    munmap(window, slice_bytes);
    return status;
  }
  ir_status status = IR_OK;
  for (size_t i = 0; i < slices.size() && status == IR_OK; i++) {
    answer a;
    steady::time_point asked = steady::now();
    received got = recv_all(child.fd, &a, sizeof a, deadline_for(slice_bytes));
    if (got != received::all) {
      child_end end = child.finish(got == received::late);
      status = child_failure(end, src, ir_display_name(slices[i].path.c_str()),
                             slices[i].encapsulated ? "decoding its compressed pixel data"
                                                    : "reading its pixel data",
                             asked, err);
      break;
    }
    status = (ir_status)a.status;
    if (status != IR_OK) {
      std::memcpy(err, a.err, IR_ERR_LEN);
      err[IR_ERR_LEN - 1] = '\0';
      break;
    }
    std::memcpy(dst + i * slice_bytes, window, slice_bytes);
    ir_progress_add(progress, slice_bytes);
    char go = 1;
    send_all(child.fd, &go, 1);
  }
  if (status == IR_OK) child.finish();
  else child.kill_now();
  munmap(window, slice_bytes);
  return status;
}

/* Every DICOM image file in the folder, grouped by series in order of first appearance. */
ir_status scan_folder(const std::string &folder, std::vector<series_group> &groups,
                      char err[IR_ERR_LEN]) {
  DIR *dir = opendir(folder.c_str());
  if (!dir) return ir_input_error(err, folder.c_str(), "cannot open the folder");
  std::vector<std::string> names;
  for (struct dirent *e; (e = readdir(dir)) != nullptr;)
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  closedir(dir);
  std::sort(names.begin(), names.end()); /* a stable scan; the order of slices comes later */
  std::vector<std::string> paths;
  std::vector<bool> part10s;
  std::vector<size_t> sizes;
  for (const std::string &name : names) {
    std::string path = folder + "/" + name;
    struct stat st;
    bool part10 = false;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !looks_like_dicom(path, &part10))
      continue;
    paths.push_back(path);
    part10s.push_back(part10);
    sizes.push_back((size_t)st.st_size);
  }
  std::vector<header_result> headers;
  ir_status read = read_headers_isolated(paths, headers, folder.c_str(), err);
  if (read != IR_OK) return read;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < paths.size(); i++) {
    const header_result &h = headers[i];
    /* A Part 10 file that is corrupt is a slice gone bad, not a stray file: skipping it would
     * load the series without it. Files without the preamble only look like DICOM. */
    if (h.kind == header_kind::corrupt && part10s[i])
      return ir_input_error(err, folder.c_str(), "%s: %s", ir_display_name(paths[i].c_str()),
                            h.why.c_str());
    if (h.kind != header_kind::image) continue;
    slice_info s = h.slice;
    s.file_size = sizes[i];
    auto it = index.find(s.series);
    if (it == index.end()) {
      it = index.emplace(s.series, groups.size()).first;
      groups.push_back(series_group{s.series, {}});
    }
    groups[it->second].slices.push_back(s);
  }
  if (groups.empty())
    return ir_input_error(err, folder.c_str(),
                          "no DICOM image files in the folder (a folder is read as a DICOM "
                          "series or as TIFF slices)");
  return IR_OK;
}

ir_status load_series(const ir_volume_desc *desc, series_group &g, ir_volume *out,
                      std::string note, char err[IR_ERR_LEN]) {
  const char *src = desc->source;
  std::vector<slice_info> &slices = g.slices;
  const slice_info &first0 = slices.front();
  bool multi = first0.frames > 1;
  if (slices.size() > 1)
    for (const slice_info &s : slices)
      if (s.frames > 1)
        return ir_input_error(err, src,
                              "series %s mixes %zu files with multi-frame ones: give one "
                              "multi-frame file to load it",
                              g.uid.c_str(), slices.size());
  for (const slice_info &s : slices) {
    if (s.samples != 1)
      return ir_input_error(err, src, "%s has %u samples a pixel (colour): only grey images are "
                            "read", ir_display_name(s.path.c_str()), s.samples);
    if (s.rows != first0.rows || s.cols != first0.cols || s.bits != first0.bits ||
        s.sign != first0.sign)
      return ir_input_error(err, src, "%s is %ux%u %u-bit, %s %ux%u %u-bit: the slices of a "
                            "series must match", ir_display_name(s.path.c_str()), s.cols, s.rows,
                            s.bits, ir_display_name(first0.path.c_str()), first0.cols,
                            first0.rows, first0.bits);
  }
  double slice_spacing = 1;
  ir_status status = order_slices(slices, src, &slice_spacing, note, err);
  if (status != IR_OK) return status;
  const slice_info &first = slices.front();
  ir_sample_type type;
  if (!sample_type_of(first.bits, first.sign, &type))
    return ir_input_error(err, src,
                          "%u-bit pixels of PixelRepresentation %u are not supported (8, 16 or "
                          "32 bits, unsigned 0 or signed 1)",
                          first.bits, first.sign);
  size_t dims[3] = {first.cols, first.rows, multi ? (size_t)first.frames : slices.size()};
  size_t bytes = 0;
  if (!ir_sample_byte_count(dims, type, &bytes, src, err)) return IR_ERR_INPUT;
  size_t budget = 0;
  for (const slice_info &s : slices) {
    size_t can = s.encapsulated ? (s.file_size > SIZE_MAX / kMaxRatio ? SIZE_MAX
                                                                      : s.file_size * kMaxRatio)
                                : s.file_size;
    budget = budget > SIZE_MAX - can ? SIZE_MAX : budget + can;
  }
  if (bytes > budget)
    return ir_input_error(err, src,
                          "%zux%zux%zu %s needs %zu bytes, more than the files can hold: the "
                          "header sizes are corrupt",
                          dims[0], dims[1], dims[2], ir_sample_name(type), bytes);
  unsigned char *samples = static_cast<unsigned char *>(std::malloc(bytes));
  if (!samples) {
    std::snprintf(err, IR_ERR_LEN, "%s: out of host memory: %zux%zux%zu %s needs %zu bytes",
                  src, dims[0], dims[1], dims[2], ir_sample_name(type), bytes);
    return IR_ERR_RUNTIME;
  }
  /* Rescaling is per slice in DICOM; one pair for the series is the common case. */
  double slope = first.slope, intercept = first.intercept;
  bool same_rescale = true;
  for (const slice_info &s : slices)
    same_rescale = same_rescale && s.slope == slope && s.intercept == intercept;
  size_t slice_bytes = bytes / slices.size();
  double spacing[3] = {first.pixel_spacing[1], first.pixel_spacing[0],
                       multi ? first.frame_spacing : slice_spacing};
  double origin[3] = {first.position[0], first.position[1], first.position[2]};
  ir_progress progress;
  ir_progress_begin(&progress, desc, ir_display_name(src), bytes);
  status = read_series_pixels(slices, src, type, slice_bytes, samples, &progress, err);
  ir_progress_end(&progress);
  if (status != IR_OK) {
    std::free(samples);
    return status;
  }
  if (!same_rescale) {
    /* Each slice its own rescaling: into int32 when every pair is integral and the values
     * fit, else float32; ir_volume_from_samples then narrows as usual. */
    size_t n = dims[0] * dims[1] * dims[2], per = dims[0] * dims[1];
    bool integral = true;
    for (const slice_info &s : slices)
      integral = integral && s.slope == std::floor(s.slope) && s.intercept == std::floor(s.intercept);
    for (size_t i = 0; i < n && integral; i++)
      integral = std::fabs(stored_value(samples, type, i) * slices[i / per].slope +
                           slices[i / per].intercept) < 2147483647.0;
    void *scaled = std::malloc(n * 4);
    if (!scaled) {
      std::free(samples);
      std::snprintf(err, IR_ERR_LEN, "%s: out of host memory rescaling %zu voxels", src, n);
      return IR_ERR_RUNTIME;
    }
    for (size_t i = 0; i < n; i++) {
      double v = stored_value(samples, type, i) * slices[i / per].slope + slices[i / per].intercept;
      if (integral) static_cast<int32_t *>(scaled)[i] = (int32_t)v;
      else static_cast<float *>(scaled)[i] = (float)v;
    }
    std::free(samples);
    samples = static_cast<unsigned char *>(scaled);
    type = integral ? IR_SAMPLE_INT32 : IR_SAMPLE_FLOAT32;
    slope = 1;
    intercept = 0;
  }
  status = ir_volume_from_samples(out, dims, samples, type, slope, intercept, src, err);
  if (status != IR_OK) return status;
  for (int k = 0; k < 3; k++) {
    out->spacing[k] = (float)spacing[k];
    out->world_origin[k] = (float)origin[k];
  }
  std::snprintf(out->modality, sizeof out->modality, "%s", first.modality.c_str());
  std::snprintf(out->description, sizeof out->description, "%s", first.description.c_str());
  std::snprintf(out->note, sizeof out->note, "%s", note.c_str());
  return IR_OK;
}

} // namespace

static ir_status load_dicom(const ir_volume_desc *desc, ir_volume *out, char err[IR_ERR_LEN]) {
  /* GDCM reports through its own stream; the loader's message says what went wrong. */
  gdcm::Trace::SetDebug(false);
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
  const char *src = desc->source;
  struct stat st;
  if (stat(src, &st) != 0) return ir_check_file(src, nullptr, err);
  bool is_dir = S_ISDIR(st.st_mode);
  std::string chosen_series;
  if (!is_dir) {
    ir_status status = ir_check_file(src, nullptr, err);
    if (status != IR_OK) return status;
    bool part10 = false;
    looks_like_dicom(src, &part10);
    std::vector<header_result> headers;
    ir_status read = read_headers_isolated({std::string(src)}, headers, src, err);
    if (read != IR_OK) return read;
    header_kind kind = headers[0].kind;
    slice_info s = headers[0].slice;
    if (kind == header_kind::corrupt && part10)
      return ir_input_error(err, src, "%s", headers[0].why.c_str());
    if (kind != header_kind::image)
      return ir_input_error(err, src, "not a DICOM image file (GDCM cannot read its header)");
    chosen_series = s.series;
    if (s.frames > 1 && !desc->series) {
      /* A multi-frame file is a volume by itself. */
      s.file_size = (size_t)st.st_size;
      series_group g{s.series, {s}};
      ir_status rc = load_series(desc, g, out, std::string(), err);
      if (rc != IR_OK) {
        ir_volume_free(out);
        return rc;
      }
      if (desc->spacing_given) std::memcpy(out->spacing, desc->spacing, sizeof out->spacing);
      ir_volume_finish(out, ir_display_name(src));
      return IR_OK;
    }
  }
  std::vector<series_group> groups;
  ir_status scanned = scan_folder(is_dir ? std::string(src) : folder_of(src), groups, err);
  if (scanned != IR_OK) return scanned;
  if (desc->series) chosen_series = desc->series;
  size_t pick = 0;
  bool found = false;
  if (is_dir && !desc->series) {
    for (size_t i = 0; i < groups.size(); i++)
      if (groups[i].frame_count() > groups[pick].frame_count()) pick = i;
    found = true;
  } else {
    for (size_t i = 0; i < groups.size() && !found; i++)
      if (groups[i].uid == chosen_series) {
        pick = i;
        found = true;
      }
  }
  if (!found) {
    std::string list;
    for (const series_group &g : groups) list += (list.empty() ? "" : ", ") + series_label(g);
    return ir_input_error(err, src, "no series %s here; the series are: %.300s",
                          chosen_series.c_str(), list.c_str());
  }
  std::string note;
  if (groups.size() > 1 && !desc->series) {
    std::string others;
    for (size_t i = 0; i < groups.size(); i++)
      if (i != pick) others += (others.empty() ? "" : ", ") + series_label(groups[i]);
    note = "loaded series " + groups[pick].uid + "; " + std::to_string(groups.size() - 1) +
           " more in the folder, pick one with --series UID: " + others;
  }
  ir_status status = load_series(desc, groups[pick], out, note, err);
  if (status != IR_OK) {
    ir_volume_free(out);
    return status;
  }
  if (desc->spacing_given) std::memcpy(out->spacing, desc->spacing, sizeof out->spacing);
  ir_volume_finish(out, ir_display_name(src));
  return IR_OK;
}

/* No C++ exception crosses into C: GDCM's (or the standard library's) become a message. */
extern "C" ir_status ir_load_dicom(const ir_volume_desc *desc, ir_volume *out,
                                   char err[IR_ERR_LEN]) {
  try {
    return load_dicom(desc, out, err);
  } catch (const std::bad_alloc &) {
    ir_volume_free(out);
    std::snprintf(err, IR_ERR_LEN, "%s: out of host memory reading DICOM", desc->source);
    return IR_ERR_RUNTIME;
  } catch (const std::exception &e) {
    ir_volume_free(out);
    return ir_input_error(err, desc->source, "GDCM failed: %s", e.what());
  }
}
