/* Wall-clock milliseconds since the epoch (CLOCK_REALTIME): what expiries of
 * tokens handed to clients are measured in. The engine reads it through the
 * pointer it is given, so tests can fix the time. */
#ifndef SN_CORE_CLOCK_H
#define SN_CORE_CLOCK_H

typedef long long sn_clock_fn(void);

long long sn_clock_now_ms(void);

#endif
