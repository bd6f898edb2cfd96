/* Writes the tests' DICOM files with GDCM's ImageWriter (see dicom_fixtures.h). */
#include "tests/data/dicom_fixtures.h"

#include <cstdio>
#include <cstring>
#include <string>

#include <gdcmAttribute.h>
#include <gdcmImage.h>
#include <gdcmImageChangeTransferSyntax.h>
#include <gdcmImageWriter.h>
#include <gdcmReader.h>
#include <gdcmTrace.h>
#include <gdcmUIDGenerator.h>
#include <gdcmWriter.h>

namespace {

void set_string(gdcm::DataSet &ds, uint16_t group, uint16_t element, gdcm::VR vr,
                const std::string &value) {
  std::string v = value;
  if (v.size() % 2) v += vr == gdcm::VR::UI ? '\0' : ' ';
  gdcm::DataElement de(gdcm::Tag(group, element));
  de.SetVR(vr);
  de.SetByteValue(v.data(), (uint32_t)v.size());
  ds.Replace(de);
}

gdcm::TransferSyntax::TSType syntax_of(dicom_compression c) {
  switch (c) {
  case DICOM_RLE: return gdcm::TransferSyntax::RLELossless;
  case DICOM_JPEG_LOSSLESS: return gdcm::TransferSyntax::JPEGLosslessProcess14_1;
  case DICOM_J2K_LOSSLESS: return gdcm::TransferSyntax::JPEG2000Lossless;
  case DICOM_JPEGLS_LOSSLESS: return gdcm::TransferSyntax::JPEGLSLossless;
  default: return gdcm::TransferSyntax::ExplicitVRLittleEndian;
  }
}

} // namespace

extern "C" int dicom_write_image(const dicom_image_spec *s, char *err, size_t err_len) {
  gdcm::Trace::SetWarning(false);
  gdcm::Trace::SetError(false);
  unsigned frames = s->frames ? s->frames : 1;
  unsigned samples = s->samples ? (unsigned)s->samples : 1;
  gdcm::SmartPointer<gdcm::Image> im = new gdcm::Image;
  im->SetNumberOfDimensions(frames > 1 ? 3 : 2);
  im->SetDimension(0, s->cols);
  im->SetDimension(1, s->rows);
  if (frames > 1) im->SetDimension(2, frames);
  gdcm::PixelFormat pf((unsigned short)samples, (unsigned short)s->bits, (unsigned short)s->bits,
                       (unsigned short)(s->bits - 1), (unsigned short)s->is_signed);
  im->SetPixelFormat(pf);
  im->SetPhotometricInterpretation(samples == 3 ? gdcm::PhotometricInterpretation::RGB
                                                : gdcm::PhotometricInterpretation::MONOCHROME2);
  if (samples == 3) im->SetPlanarConfiguration(0);
  im->SetSpacing(0, s->col_spacing);
  im->SetSpacing(1, s->row_spacing);
  if (frames > 1) im->SetSpacing(2, s->slice_spacing);
  /* By index: the array form keeps only NumberOfDimensions values (z is lost for a slice). */
  for (unsigned k = 0; k < 3; k++) im->SetOrigin(k, s->position[k]);
  im->SetDirectionCosines(s->orientation);
  im->SetIntercept(s->intercept);
  im->SetSlope(s->slope);
  size_t bytes = (size_t)s->rows * s->cols * frames * samples * (size_t)(s->bits / 8);
  gdcm::DataElement pd(gdcm::Tag(0x7fe0, 0x0010));
  pd.SetByteValue(static_cast<const char *>(s->pixels), (uint32_t)bytes);
  im->SetDataElement(pd);
  im->SetTransferSyntax(gdcm::TransferSyntax::ExplicitVRLittleEndian);

  gdcm::ImageWriter w;
  if (s->compression != DICOM_RAW) {
    gdcm::ImageChangeTransferSyntax change;
    change.SetTransferSyntax(syntax_of(s->compression));
    change.SetInput(*im);
    if (!change.Change()) {
      std::snprintf(err, err_len, "GDCM cannot compress to %d", (int)s->compression);
      return -1;
    }
    w.SetImage(change.GetOutput());
  } else {
    w.SetImage(*im);
  }
  gdcm::DataSet &ds = w.GetFile().GetDataSet();
  gdcm::MediaStorage ms = samples == 3 ? gdcm::MediaStorage::SecondaryCaptureImageStorage
                          : frames > 1 ? gdcm::MediaStorage::EnhancedCTImageStorage
                                       : gdcm::MediaStorage::CTImageStorage;
  set_string(ds, 0x0008, 0x0016, gdcm::VR::UI, gdcm::MediaStorage::GetMSString(ms));
  gdcm::UIDGenerator uid;
  set_string(ds, 0x0008, 0x0018, gdcm::VR::UI, uid.Generate());
  set_string(ds, 0x0020, 0x000e, gdcm::VR::UI, s->series_uid ? s->series_uid : "1.2.3.4");
  set_string(ds, 0x0020, 0x000d, gdcm::VR::UI, "1.2.3");
  set_string(ds, 0x0008, 0x0060, gdcm::VR::CS, s->modality ? s->modality : "CT");
  if (s->description) set_string(ds, 0x0008, 0x103e, gdcm::VR::LO, s->description);
  if (s->instance_number) set_string(ds, 0x0020, 0x0013, gdcm::VR::IS, std::to_string(s->instance_number));
  w.SetFileName(s->path);
  if (!w.Write()) {
    std::snprintf(err, err_len, "GDCM cannot write %s", s->path);
    return -1;
  }
  return 0;
}

extern "C" int dicom_patch_us(const char *path, unsigned group, unsigned element, unsigned value) {
  gdcm::Reader r;
  r.SetFileName(path);
  if (!r.Read()) return -1;
  gdcm::DataSet &ds = r.GetFile().GetDataSet();
  gdcm::DataElement de(gdcm::Tag((uint16_t)group, (uint16_t)element));
  de.SetVR(gdcm::VR::US);
  uint16_t v = (uint16_t)value;
  de.SetByteValue(reinterpret_cast<const char *>(&v), 2);
  ds.Replace(de);
  gdcm::Writer w;
  w.SetFile(r.GetFile());
  w.SetFileName(path);
  return w.Write() ? 0 : -1;
}
