// libxml2's push parser and SAX2 interface (Debian's libxml2-dev), for feeds streamed as they arrive.
#ifndef HUBBUB_CLIBXML2_SHIM_H
#define HUBBUB_CLIBXML2_SHIM_H
#include <libxml/xmlversion.h>
// Debian builds libxml2 with ICU, whose headers clash with the ICU Foundation bundles when one
// Swift module sees both. Nothing here touches the ICU-dependent fields of libxml2's encoding
// structures (only pointers to them), so the ICU headers are left out.
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#endif
