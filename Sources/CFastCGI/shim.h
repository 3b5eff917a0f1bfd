#ifndef ATTESTEDGE_CFASTCGI_SHIM_H
#define ATTESTEDGE_CFASTCGI_SHIM_H
#include <fcgiapp.h>
#endif
