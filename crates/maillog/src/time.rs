//! Civil-date arithmetic (proleptic Gregorian, UTC) on microseconds since the epoch.

pub const US: i64 = 1_000_000;
pub const DAY_US: i64 = 86_400 * US;

pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if is_leap(y) {
                29
            } else {
                28
            }
        }
    }
}

/// Month (1..12) of a timestamp.
pub fn month_of(us: i64) -> u8 {
    civil_from_days(us.div_euclid(DAY_US)).1 as u8
}

/// `ts + interval n years` (DuckDB clamps Feb 29 to Feb 28).
pub fn add_years(us: i64, n: i64) -> i64 {
    let days = us.div_euclid(DAY_US);
    let rem = us.rem_euclid(DAY_US);
    let (y, m, d) = civil_from_days(days);
    let y2 = y + n;
    let d2 = d.min(days_in_month(y2, m));
    days_from_civil(y2, m, d2) * DAY_US + rem
}

fn num(x: &[u8]) -> Option<i64> {
    if x.is_empty() || !x.iter().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(x.iter().fold(0i64, |a, &b| a * 10 + (b - b'0') as i64))
}

/// `YYYY-MM-DD?HH:MM:SS[.f+]` (separator at 10 is not checked here) as a validated
/// timestamp, like DuckDB's try_cast(... as timestamp); None when out of range.
pub fn iso_to_us(s: &[u8]) -> Option<i64> {
    if s.len() < 19 {
        return None;
    }
    let y = num(&s[0..4])?;
    let mo = num(&s[5..7])?;
    let d = num(&s[8..10])?;
    let h = num(&s[11..13])?;
    let mi = num(&s[14..16])?;
    let se = num(&s[17..19])?;
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 24 || mi > 59 || se > 59 {
        return None;
    }
    let mut frac = 0i64;
    if s.len() > 19 {
        if s[19] != b'.' {
            return None;
        }
        let f = &s[20..];
        if f.is_empty() || !f.iter().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // microseconds: the first six digits (DuckDB rounds a seventh; rare enough in logs)
        let mut m = 0i64;
        for i in 0..6 {
            m = m * 10 + f.get(i).map_or(0, |b| (b - b'0') as i64);
        }
        frac = m;
    }
    if h == 24 && (mi != 0 || se != 0 || frac != 0) {
        return None;
    }
    Some(days_from_civil(y, mo, d) * DAY_US + (h * 3600 + mi * 60 + se) * US + frac)
}
