# PowerShell completion for tether: add it to your profile ($PROFILE),
#   tether completion powershell | Out-String | Invoke-Expression
# The candidates come from the tether binary itself (tether __complete),
# which knows the commands, their flags and the running service's agents.
Register-ArgumentCompleter -Native -CommandName tether, tether.exe -ScriptBlock {
	param($wordToComplete, $commandAst, $cursorPosition)
	$words = @($commandAst.CommandElements |
		Where-Object { $_.Extent.StartOffset -lt $cursorPosition } |
		ForEach-Object { $_.Extent.Text })
	$exe = $words[0]
	$rest = @()
	if ($words.Count -gt 1) { $rest = @($words[1..($words.Count - 1)]) }
	if ($wordToComplete -eq '') {
		# A new word: an empty argument, which Windows PowerShell and the
		# legacy argument passing drop unless it is written "".
		if ($null -ne $PSNativeCommandArgumentPassing -and $PSNativeCommandArgumentPassing -ne 'Legacy') {
			$rest += ''
		} else {
			$rest += '""'
		}
	}
	# Nothing from tether (--config FILE): PowerShell offers file names.
	& $exe __complete @rest 2>$null | ForEach-Object {
		[System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
	}
}
