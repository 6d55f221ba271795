-- The run each landed file belongs to (see int_folder_runs), for joining file-level rows.

select
    files.file_id,
    files.run_key,
    files.path,
    folder_runs.run_id
from {{ ref('stg_raw__files') }} as files
inner join {{ ref('int_folder_runs') }} as folder_runs
    on files.run_key = folder_runs.run_key
