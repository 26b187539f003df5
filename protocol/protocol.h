#pragma once
// Umbrella header for vks_protocol.
#include "protocol/errors.h"
#include "protocol/frame.h"
#include "protocol/limits.h"
#include "protocol/requests.h"
#include "protocol/responses.h"
#include "protocol/stats.h"
#include "protocol/tag.h"
#include "protocol/topic.h"
#include "protocol/version.h"
