// Package dashboard serves the fleet dashboard: a handful of pages that
// read the query API (/v1/...) from the browser and show the fleet at a
// glance. The query service mounts the handler (New) as its UI for every
// path outside the API; this package does not import the API, and the API
// does not import it.
//
// Pages (each a path the handler answers with the page shell, rendered in
// the browser by assets/app.js and the module under assets/pages/):
//
//	/                 fleet overview: key figures, violations over time,
//	                  top violated rules, agents by compliance, live feed
//	/matrix           rule × run matrix coloured by status, linking to runs and rules
//	/runs             runs, newest first, by status, agent or rule
//	/runs/{run}       a run's timeline: events, verdict transitions, the
//	                  violating subformula highlighted in the printed rule
//	/rules            rules with their runs by status
//	/rules/{rule}     a rule: its text, violations over time, violating runs
//	/deadletters      the dead letters with their reasons
//	/subscriptions    alert subscriptions with their delivery status, and silences
//
// Decisions:
//   - No build step and no external code: plain HTML, one CSS file and
//     vanilla JavaScript modules, embedded with embed and served from
//     /assets/. Charts are inline SVG drawn by assets/chart.js; there is no
//     vendored library. The Content-Security-Policy allows scripts, styles
//     and fetches from the service itself only, and no inline script or
//     style attribute, so a value shown from the store cannot run as code;
//     the pages build the DOM with text nodes only, never innerHTML.
//   - The pages render in the browser from the API, the same answers a
//     script gets, instead of being rendered on the server: the dashboard
//     needs nothing but the API, and the browser tests compare what a page
//     shows with what the API answered.
//   - Each page is a full page load (links are plain links). Pages are
//     small, the assets are revalidated by entity tag, and no page has to
//     undo another's state (timers, the live stream).
//   - The live feed reads GET /v1/stream with fetch() and a streaming body
//     rather than EventSource, because EventSource cannot send the
//     Authorization header a service with tokens requires. It reconnects
//     after a dropped connection, backing off from 1 s to 15 s, and stops,
//     saying why, when the service refuses the token. It starts only when
//     the service's /openapi.json describes /v1/stream; otherwise the
//     overview says the service does not stream, rather than ask for a
//     route that is not there.
//   - The token is kept in the browser's local storage and sent as
//     "Authorization: Bearer …" with every request. A 401 asks for a token
//     and a 403 says the token's scope does not reach the route. The
//     subscriptions page only reads (any token); they are written with
//     ponens alerts or the API's admin routes.
//   - The time range (1 h to 30 days) is a query parameter (?since=24h)
//     remembered in local storage; the chart's step follows from it.
//   - Elements the browser tests read carry data-k attributes; they are
//     part of the markup's contract with the tests, not styling hooks.
//   - The dashboard is served at the root of the query service; it has no
//     path prefix option.
package dashboard
