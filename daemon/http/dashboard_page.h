// The dashboard's one document, served for every page (/, /jobs, /job,
// /store): its script draws the page its path names from the JSON API
// (same origin, the token in an HttpOnly cookie) and refreshes every 2 s.
// Every string the daemon gives (node, job, resource and metric names,
// reasons, logs) goes into the page as text (text nodes, textContent; SVG
// made with createElementNS), never as markup, so a name cannot run script.
#pragma once

namespace clusterd {

extern const char kDashboardPage[];

}  // namespace clusterd
