// The dashboard's one page (GET /): it fetches /api/status and /api/jobs
// with the token from its ?token= and draws them every 2 s. Every string
// the daemon gives (node, job and resource names, reasons) goes into the
// page as text (textContent), never as markup, so a name cannot run script.
#pragma once

namespace clusterd {

extern const char kDashboardPage[];

}  // namespace clusterd
