/* Header formats not read yet. */
#include "data/volume_internal.h"

ir_status ir_load_nrrd(const ir_volume_desc *d, ir_volume *o, char err[IR_ERR_LEN]) { (void)o; return ir_input_error(err, d->source, "NRRD is not read yet"); }
ir_status ir_load_meta(const ir_volume_desc *d, ir_volume *o, char err[IR_ERR_LEN]) { (void)o; return ir_input_error(err, d->source, "MetaImage is not read yet"); }
ir_status ir_load_nifti(const ir_volume_desc *d, ir_volume *o, char err[IR_ERR_LEN]) { (void)o; return ir_input_error(err, d->source, "NIfTI is not read yet"); }
ir_status ir_load_qvis(const ir_volume_desc *d, ir_volume *o, char err[IR_ERR_LEN]) { (void)o; return ir_input_error(err, d->source, "QVis is not read yet"); }
